#include "gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"

namespace reprise::gguf {
namespace {

class BufferSink {
 public:
  void Write(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + size);
  }
  uint64_t offset() const { return out.size(); }
  std::vector<uint8_t> out;
};

// Buffered writes to a file descriptor; the first error sticks.
class FdSink {
 public:
  FdSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buffer_.reserve(kSize); }
  void Write(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    offset_ += size;
    if (size >= kSize) {
      Flush();
      WriteDirect(p, size);
      return;
    }
    if (buffer_.size() + size > kSize) Flush();
    buffer_.insert(buffer_.end(), p, p + size);
  }
  uint64_t offset() const { return offset_; }
  Status Finish() {
    Flush();
    return status_;
  }

 private:
  static constexpr size_t kSize = 1 << 20;
  void Flush() {
    WriteDirect(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  void WriteDirect(const uint8_t* p, size_t size) {
    while (status_.ok() && size > 0) {
      ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        status_ = ErrnoError("write " + path_, errno);
        return;
      }
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  int fd_;
  std::string path_;
  std::vector<uint8_t> buffer_;
  uint64_t offset_ = 0;
  Status status_;
};

template <typename Sink, typename T>
void Put(Sink& sink, T value) {
  sink.Write(&value, sizeof(value));
}

template <typename Sink>
void PutString(Sink& sink, std::string_view s) {
  Put<Sink, uint64_t>(sink, s.size());
  sink.Write(s.data(), s.size());
}

template <typename Sink>
void PutPadding(Sink& sink, uint64_t alignment) {
  static const uint8_t zeros[64] = {};
  uint64_t pad = (alignment - sink.offset() % alignment) % alignment;
  while (pad > 0) {
    const uint64_t n = pad < sizeof(zeros) ? pad : sizeof(zeros);
    sink.Write(zeros, n);
    pad -= n;
  }
}

}  // namespace

GgufWriter::Entry& GgufWriter::Slot(std::string_view key) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e = Entry();
      e.key = std::string(key);
      return e;
    }
  }
  entries_.emplace_back();
  entries_.back().key = std::string(key);
  return entries_.back();
}

void GgufWriter::SetScalar(std::string_view key, ValueType type, const void* bytes, size_t size) {
  Entry& e = Slot(key);
  e.type = type;
  e.scalar.assign(static_cast<const uint8_t*>(bytes), static_cast<const uint8_t*>(bytes) + size);
}

void GgufWriter::SetU8(std::string_view key, uint8_t v) {
  SetScalar(key, ValueType::kUint8, &v, sizeof(v));
}
void GgufWriter::SetU32(std::string_view key, uint32_t v) {
  SetScalar(key, ValueType::kUint32, &v, sizeof(v));
}
void GgufWriter::SetI32(std::string_view key, int32_t v) {
  SetScalar(key, ValueType::kInt32, &v, sizeof(v));
}
void GgufWriter::SetU64(std::string_view key, uint64_t v) {
  SetScalar(key, ValueType::kUint64, &v, sizeof(v));
}
void GgufWriter::SetF32(std::string_view key, float v) {
  SetScalar(key, ValueType::kFloat32, &v, sizeof(v));
}
void GgufWriter::SetBool(std::string_view key, bool v) {
  const uint8_t b = v ? 1 : 0;
  SetScalar(key, ValueType::kBool, &b, 1);
}
void GgufWriter::SetString(std::string_view key, std::string_view v) {
  Entry& e = Slot(key);
  e.type = ValueType::kString;
  e.str = std::string(v);
}
void GgufWriter::SetStringArray(std::string_view key, std::vector<std::string> v) {
  Entry& e = Slot(key);
  e.type = ValueType::kArray;
  e.array_type = ValueType::kString;
  e.array_count = v.size();
  e.strings = std::move(v);
}
void GgufWriter::SetF32Array(std::string_view key, std::span<const float> v) {
  Entry& e = Slot(key);
  e.type = ValueType::kArray;
  e.array_type = ValueType::kFloat32;
  e.array_count = v.size();
  e.raw.resize(v.size_bytes());
  if (!v.empty()) std::memcpy(e.raw.data(), v.data(), v.size_bytes());
}
void GgufWriter::SetI32Array(std::string_view key, std::span<const int32_t> v) {
  Entry& e = Slot(key);
  e.type = ValueType::kArray;
  e.array_type = ValueType::kInt32;
  e.array_count = v.size();
  e.raw.resize(v.size_bytes());
  if (!v.empty()) std::memcpy(e.raw.data(), v.data(), v.size_bytes());
}

bool GgufWriter::HasKey(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return true;
  }
  return false;
}

Status GgufWriter::AddTensor(std::string_view name, DType dtype, std::vector<uint64_t> dims,
                             std::vector<uint8_t> data) {
  if (dims.empty() || dims.size() > kMaxTensorDims) {
    return InvalidArgumentError("tensor '" + std::string(name) + "': " +
                                std::to_string(dims.size()) + " dimensions");
  }
  const DTypeInfo& info = GetDTypeInfo(dtype);
  uint64_t elements = 1;
  for (uint64_t d : dims) {
    if (d == 0) return InvalidArgumentError("tensor '" + std::string(name) + "': zero dimension");
    elements *= d;
  }
  if (dims[0] % info.block_elements != 0) {
    return InvalidArgumentError("tensor '" + std::string(name) + "': row length " +
                                std::to_string(dims[0]) + " is not a multiple of the " +
                                std::string(info.name) + " block (" +
                                std::to_string(info.block_elements) + ")");
  }
  const uint64_t bytes = elements / info.block_elements * info.block_bytes;
  if (bytes != data.size()) {
    return InvalidArgumentError("tensor '" + std::string(name) + "': " +
                                std::to_string(data.size()) + " bytes given, " +
                                std::to_string(bytes) + " expected");
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) return InvalidArgumentError("duplicate tensor '" + std::string(name) + "'");
  }
  tensors_.push_back(Tensor{std::string(name), dtype, std::move(dims), std::move(data)});
  return Status::Ok();
}

uint64_t GgufWriter::Alignment() const {
  for (const Entry& e : entries_) {
    if (e.key == "general.alignment" && e.type == ValueType::kUint32) {
      uint32_t a;
      std::memcpy(&a, e.scalar.data(), 4);
      if (a != 0 && (a & (a - 1)) == 0) return a;
    }
  }
  return kDefaultAlignment;
}

template <typename Sink>
void GgufWriter::Emit(Sink& sink) const {
  const uint64_t alignment = Alignment();
  Put<Sink, uint32_t>(sink, kMagic);
  Put<Sink, uint32_t>(sink, 3);
  Put<Sink, uint64_t>(sink, tensors_.size());
  Put<Sink, uint64_t>(sink, entries_.size());
  for (const Entry& e : entries_) {
    PutString(sink, e.key);
    Put<Sink, uint32_t>(sink, static_cast<uint32_t>(e.type));
    if (e.type == ValueType::kString) {
      PutString(sink, e.str);
    } else if (e.type == ValueType::kArray) {
      Put<Sink, uint32_t>(sink, static_cast<uint32_t>(e.array_type));
      Put<Sink, uint64_t>(sink, e.array_count);
      if (e.array_type == ValueType::kString) {
        for (const std::string& s : e.strings) PutString(sink, s);
      } else {
        sink.Write(e.raw.data(), e.raw.size());
      }
    } else {
      sink.Write(e.scalar.data(), e.scalar.size());
    }
  }
  uint64_t relative = 0;
  for (const Tensor& t : tensors_) {
    PutString(sink, t.name);
    Put<Sink, uint32_t>(sink, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) Put<Sink, uint64_t>(sink, d);
    Put<Sink, uint32_t>(sink, static_cast<uint32_t>(t.dtype));
    Put<Sink, uint64_t>(sink, relative);
    relative += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  PutPadding(sink, alignment);
  for (const Tensor& t : tensors_) {
    sink.Write(t.data.data(), t.data.size());
    PutPadding(sink, alignment);
  }
}

std::vector<uint8_t> GgufWriter::WriteToBuffer() const {
  BufferSink sink;
  Emit(sink);
  return std::move(sink.out);
}

Status GgufWriter::WriteToFile(const std::string& path) const {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.is_valid()) return ErrnoError("create " + temp, errno);
  FdSink sink(fd.get(), temp);
  Emit(sink);
  Status status = sink.Finish();
  if (status.ok() && ::fsync(fd.get()) != 0) status = ErrnoError("fsync " + temp, errno);
  fd.Reset();
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("rename to " + path, errno);
  }
  if (!status.ok()) ::unlink(temp.c_str());
  return status;
}

}  // namespace reprise::gguf
