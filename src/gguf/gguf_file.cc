#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "base/checked_math.h"

namespace reprise::gguf {
namespace {

constexpr int kMaxArrayNesting = 8;

// Reads little-endian fields from the file with bounds checks. Every failure names the field
// and the offset at which it was read.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return bytes_.size() - offset_; }

  Status Need(uint64_t count, std::string_view field) const {
    if (count > remaining()) {
      return CorruptError(std::string(field) + " at offset " + std::to_string(offset_) +
                          ": needs " + std::to_string(count) + " bytes, " +
                          std::to_string(remaining()) + " left in the file");
    }
    return Status::Ok();
  }

  template <typename T>
  Result<T> Read(std::string_view field) {
    REPRISE_RETURN_IF_ERROR(Need(sizeof(T), field));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }

  Result<std::span<const uint8_t>> ReadBytes(uint64_t count, std::string_view field) {
    REPRISE_RETURN_IF_ERROR(Need(count, field));
    auto out = bytes_.subspan(offset_, count);
    offset_ += count;
    return out;
  }

  Result<std::string_view> ReadString(std::string_view field) {
    const uint64_t at = offset_;
    REPRISE_ASSIGN_OR_RETURN(uint64_t length, Read<uint64_t>(field));
    if (length > remaining()) {
      return CorruptError(std::string(field) + " at offset " + std::to_string(at) +
                          ": string length " + std::to_string(length) + " exceeds the " +
                          std::to_string(remaining()) + " bytes left in the file");
    }
    auto span = bytes_.subspan(offset_, length);
    offset_ += length;
    return std::string_view(reinterpret_cast<const char*>(span.data()), span.size());
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t offset_ = 0;
};

bool IsKnownValueType(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::kFloat64); }

Status ReadValue(Cursor& cursor, ValueType type, Value& out, const std::string& field,
                 int depth);

Status ReadArray(Cursor& cursor, Value& out, const std::string& field, int depth) {
  if (depth >= kMaxArrayNesting) {
    return CorruptError(field + " at offset " + std::to_string(cursor.offset()) +
                        ": arrays nested deeper than " + std::to_string(kMaxArrayNesting));
  }
  const uint64_t type_offset = cursor.offset();
  REPRISE_ASSIGN_OR_RETURN(uint32_t raw_type, cursor.Read<uint32_t>(field + " element type"));
  if (!IsKnownValueType(raw_type)) {
    return CorruptError(field + " at offset " + std::to_string(type_offset) +
                        ": unknown array element type " + std::to_string(raw_type));
  }
  const uint64_t count_offset = cursor.offset();
  REPRISE_ASSIGN_OR_RETURN(uint64_t count, cursor.Read<uint64_t>(field + " element count"));
  out.array_type = static_cast<ValueType>(raw_type);
  out.array_count = count;
  const uint32_t scalar = ScalarSize(out.array_type);
  // Every element takes at least 1 byte (scalars), 8 (a string length) or 12 (an array
  // header), so a count the file cannot hold is rejected before any allocation.
  const uint64_t min_element_bytes =
      scalar != 0 ? scalar : (out.array_type == ValueType::kString ? 8 : 12);
  auto min_total = CheckedMul(count, min_element_bytes);
  if (!min_total || *min_total > cursor.remaining()) {
    return CorruptError(field + " at offset " + std::to_string(count_offset) +
                        ": array of " + std::to_string(count) + " " +
                        std::string(ValueTypeName(out.array_type)) + " elements exceeds the " +
                        std::to_string(cursor.remaining()) + " bytes left in the file");
  }
  if (scalar != 0) {
    REPRISE_ASSIGN_OR_RETURN(out.array_raw, cursor.ReadBytes(*min_total, field));
    if (out.array_type == ValueType::kBool) {
      for (uint8_t b : out.array_raw) {
        if (b > 1) {
          return CorruptError(field + ": bool array element is " + std::to_string(b));
        }
      }
    }
    return Status::Ok();
  }
  if (out.array_type == ValueType::kString) {
    out.array_strings.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      REPRISE_ASSIGN_OR_RETURN(std::string_view s,
                               cursor.ReadString(field + "[" + std::to_string(i) + "]"));
      out.array_strings.push_back(s);
    }
    return Status::Ok();
  }
  out.array_nested.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    out.array_nested[i].type = ValueType::kArray;
    REPRISE_RETURN_IF_ERROR(ReadArray(cursor, out.array_nested[i],
                                      field + "[" + std::to_string(i) + "]", depth + 1));
  }
  return Status::Ok();
}

Status ReadValue(Cursor& cursor, ValueType type, Value& out, const std::string& field,
                 int depth) {
  out.type = type;
  switch (type) {
    case ValueType::kUint8: {
      REPRISE_ASSIGN_OR_RETURN(uint8_t v, cursor.Read<uint8_t>(field));
      out.u64 = v;
      return Status::Ok();
    }
    case ValueType::kInt8: {
      REPRISE_ASSIGN_OR_RETURN(int8_t v, cursor.Read<int8_t>(field));
      out.i64 = v;
      return Status::Ok();
    }
    case ValueType::kUint16: {
      REPRISE_ASSIGN_OR_RETURN(uint16_t v, cursor.Read<uint16_t>(field));
      out.u64 = v;
      return Status::Ok();
    }
    case ValueType::kInt16: {
      REPRISE_ASSIGN_OR_RETURN(int16_t v, cursor.Read<int16_t>(field));
      out.i64 = v;
      return Status::Ok();
    }
    case ValueType::kUint32: {
      REPRISE_ASSIGN_OR_RETURN(uint32_t v, cursor.Read<uint32_t>(field));
      out.u64 = v;
      return Status::Ok();
    }
    case ValueType::kInt32: {
      REPRISE_ASSIGN_OR_RETURN(int32_t v, cursor.Read<int32_t>(field));
      out.i64 = v;
      return Status::Ok();
    }
    case ValueType::kUint64: {
      REPRISE_ASSIGN_OR_RETURN(uint64_t v, cursor.Read<uint64_t>(field));
      out.u64 = v;
      return Status::Ok();
    }
    case ValueType::kInt64: {
      REPRISE_ASSIGN_OR_RETURN(int64_t v, cursor.Read<int64_t>(field));
      out.i64 = v;
      return Status::Ok();
    }
    case ValueType::kFloat32: {
      REPRISE_ASSIGN_OR_RETURN(float v, cursor.Read<float>(field));
      out.f64 = v;
      return Status::Ok();
    }
    case ValueType::kFloat64: {
      REPRISE_ASSIGN_OR_RETURN(double v, cursor.Read<double>(field));
      out.f64 = v;
      return Status::Ok();
    }
    case ValueType::kBool: {
      const uint64_t at = cursor.offset();
      REPRISE_ASSIGN_OR_RETURN(uint8_t v, cursor.Read<uint8_t>(field));
      if (v > 1) {
        return CorruptError(field + " at offset " + std::to_string(at) + ": bool value is " +
                            std::to_string(v));
      }
      out.u64 = v;
      return Status::Ok();
    }
    case ValueType::kString: {
      REPRISE_ASSIGN_OR_RETURN(out.str, cursor.ReadString(field));
      return Status::Ok();
    }
    case ValueType::kArray:
      return ReadArray(cursor, out, field, depth);
  }
  return CorruptError(field + ": unknown value type");
}

// Reads element i of a numeric array as T (little-endian, unaligned).
template <typename T>
T RawElement(const Value& value, uint64_t i) {
  T out;
  std::memcpy(&out, value.array_raw.data() + i * sizeof(T), sizeof(T));
  return out;
}

Status WrongType(std::string_view key, const Value& value, std::string_view wanted) {
  return InvalidArgumentError("metadata '" + std::string(key) + "' is " +
                              std::string(ValueTypeName(value.type)) + ", expected " +
                              std::string(wanted));
}

}  // namespace

Result<GgufFile> GgufFile::Open(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path));
  GgufFile file;
  file.path_ = path;
  file.mapped_ = std::make_unique<MappedFile>(std::move(mapped));
  file.bytes_ = file.mapped_->data();
  Status status = file.ParseAll();
  if (!status.ok()) return status.WithContext(path);
  return file;
}

Result<GgufFile> GgufFile::Parse(std::span<const uint8_t> bytes) {
  GgufFile file;
  file.bytes_ = bytes;
  REPRISE_RETURN_IF_ERROR(file.ParseAll());
  return file;
}

Status GgufFile::ParseAll() {
  Cursor cursor(bytes_);
  REPRISE_ASSIGN_OR_RETURN(uint32_t magic, cursor.Read<uint32_t>("magic"));
  if (magic != kMagic) {
    return CorruptError("not a GGUF file: magic at offset 0 is 0x" +
                        [&] {
                          char buf[16];
                          std::snprintf(buf, sizeof(buf), "%08x", magic);
                          return std::string(buf);
                        }() +
                        ", expected 0x46554747 (\"GGUF\")");
  }
  REPRISE_ASSIGN_OR_RETURN(version_, cursor.Read<uint32_t>("version"));
  if (version_ == 1) {
    return UnimplementedError("GGUF version 1 (offset 4) is not supported; convert to v3");
  }
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xffff) == 0 && (version_ >> 24) <= 3) {
      return UnimplementedError("GGUF version field at offset 4 is " +
                                std::to_string(version_) +
                                ": a big-endian GGUF file, which is not supported");
    }
    return CorruptError("unsupported GGUF version " + std::to_string(version_) +
                        " at offset 4 (supported: 2, 3)");
  }
  const uint64_t tensor_count_offset = cursor.offset();
  REPRISE_ASSIGN_OR_RETURN(uint64_t num_tensors, cursor.Read<uint64_t>("tensor count"));
  const uint64_t kv_count_offset = cursor.offset();
  REPRISE_ASSIGN_OR_RETURN(uint64_t num_kv, cursor.Read<uint64_t>("metadata count"));
  // A metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor entry at
  // least 8 + 4 + 4 + 8.
  if (num_kv > cursor.remaining() / 13) {
    return CorruptError("metadata count " + std::to_string(num_kv) + " at offset " +
                        std::to_string(kv_count_offset) + " cannot fit in a " +
                        std::to_string(bytes_.size()) + "-byte file");
  }
  if (num_tensors > cursor.remaining() / 24) {
    return CorruptError("tensor count " + std::to_string(num_tensors) + " at offset " +
                        std::to_string(tensor_count_offset) + " cannot fit in a " +
                        std::to_string(bytes_.size()) + "-byte file");
  }

  metadata_.reserve(num_kv);
  for (uint64_t i = 0; i < num_kv; ++i) {
    MetadataEntry entry;
    entry.offset = cursor.offset();
    const std::string field = "metadata entry " + std::to_string(i);
    REPRISE_ASSIGN_OR_RETURN(entry.key, cursor.ReadString(field + " key"));
    const std::string key_field = "metadata '" + std::string(entry.key) + "'";
    const uint64_t type_offset = cursor.offset();
    REPRISE_ASSIGN_OR_RETURN(uint32_t raw_type, cursor.Read<uint32_t>(key_field + " type"));
    if (!IsKnownValueType(raw_type)) {
      return CorruptError(key_field + " at offset " + std::to_string(type_offset) +
                          ": unknown value type " + std::to_string(raw_type));
    }
    REPRISE_RETURN_IF_ERROR(
        ReadValue(cursor, static_cast<ValueType>(raw_type), entry.value, key_field, 0));
    if (!metadata_index_.emplace(entry.key, metadata_.size()).second) {
      return CorruptError(key_field + " at offset " + std::to_string(entry.offset) +
                          ": duplicate key");
    }
    metadata_.push_back(std::move(entry));
  }

  if (const Value* align = FindValue("general.alignment")) {
    if (!IsIntegerType(align->type)) {
      return CorruptError("general.alignment has type " +
                          std::string(ValueTypeName(align->type)) + ", expected an integer");
    }
    const uint64_t a = align->type == ValueType::kUint8 || align->type == ValueType::kUint16 ||
                               align->type == ValueType::kUint32 ||
                               align->type == ValueType::kUint64
                           ? align->u64
                           : static_cast<uint64_t>(align->i64);
    if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 20)) {
      return CorruptError("general.alignment is " + std::to_string(a) +
                          ", expected a power of two up to 1 MiB");
    }
    alignment_ = a;
  }

  tensors_.reserve(num_tensors);
  std::vector<uint64_t> relative_offsets;
  relative_offsets.reserve(num_tensors);
  for (uint64_t i = 0; i < num_tensors; ++i) {
    TensorInfo tensor;
    const uint64_t entry_offset = cursor.offset();
    std::string field = "tensor " + std::to_string(i);
    REPRISE_ASSIGN_OR_RETURN(tensor.name, cursor.ReadString(field + " name"));
    field += " ('" + std::string(tensor.name) + "')";
    const uint64_t dims_offset = cursor.offset();
    REPRISE_ASSIGN_OR_RETURN(uint32_t num_dims, cursor.Read<uint32_t>(field + " dimension count"));
    if (num_dims == 0 || num_dims > kMaxTensorDims) {
      return CorruptError(field + " at offset " + std::to_string(dims_offset) + ": " +
                          std::to_string(num_dims) + " dimensions (expected 1 to " +
                          std::to_string(kMaxTensorDims) + ")");
    }
    uint64_t num_elements = 1;
    for (uint32_t d = 0; d < num_dims; ++d) {
      const uint64_t dim_offset = cursor.offset();
      REPRISE_ASSIGN_OR_RETURN(uint64_t dim, cursor.Read<uint64_t>(field + " dimension"));
      auto product = CheckedMul(num_elements, dim);
      if (dim == 0 || !product || *product > (uint64_t{1} << 53)) {
        return CorruptError(field + " dims[" + std::to_string(d) + "] at offset " +
                            std::to_string(dim_offset) + " is " + std::to_string(dim) +
                            (dim == 0 ? " (zero)" : " (element count overflows)"));
      }
      num_elements = *product;
      tensor.dims.push_back(dim);
    }
    const uint64_t type_offset = cursor.offset();
    REPRISE_ASSIGN_OR_RETURN(uint32_t raw_dtype, cursor.Read<uint32_t>(field + " type"));
    auto info = LookupDType(raw_dtype);
    if (!info) {
      return CorruptError(field + " type at offset " + std::to_string(type_offset) +
                          " is unknown ggml type id " + std::to_string(raw_dtype));
    }
    tensor.dtype = info->dtype;
    if (tensor.dims[0] % info->block_elements != 0) {
      return CorruptError(field + " of type " + std::string(info->name) + ": row length " +
                          std::to_string(tensor.dims[0]) + " is not a multiple of its block of " +
                          std::to_string(info->block_elements));
    }
    tensor.num_elements = num_elements;
    auto size = CheckedMul(num_elements / info->block_elements, info->block_bytes);
    if (!size) return CorruptError(field + ": byte size overflows");
    tensor.size_bytes = *size;
    const uint64_t offset_offset = cursor.offset();
    REPRISE_ASSIGN_OR_RETURN(uint64_t relative, cursor.Read<uint64_t>(field + " data offset"));
    if (relative % alignment_ != 0) {
      return CorruptError(field + " data offset " + std::to_string(relative) + " at offset " +
                          std::to_string(offset_offset) + " is not a multiple of the alignment " +
                          std::to_string(alignment_));
    }
    if (!tensor_index_.emplace(tensor.name, tensors_.size()).second) {
      return CorruptError(field + " at offset " + std::to_string(entry_offset) +
                          ": duplicate tensor name");
    }
    relative_offsets.push_back(relative);
    tensors_.push_back(std::move(tensor));
  }

  auto data_start = CheckedAlignUp(cursor.offset(), alignment_);
  if (!data_start) return CorruptError("tensor data offset overflows");
  data_offset_ = *data_start;
  if (!tensors_.empty() && data_offset_ > bytes_.size()) {
    return CorruptError("tensor data section would start at offset " +
                        std::to_string(data_offset_) + ", past the end of the " +
                        std::to_string(bytes_.size()) + "-byte file");
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorInfo& tensor = tensors_[i];
    auto begin = CheckedAdd(data_offset_, relative_offsets[i]);
    auto end = begin ? CheckedAdd(*begin, tensor.size_bytes) : std::nullopt;
    if (!end || *end > bytes_.size()) {
      return CorruptError("tensor " + std::to_string(i) + " ('" + std::string(tensor.name) +
                          "') data [" + std::to_string(relative_offsets[i]) + ", +" +
                          std::to_string(tensor.size_bytes) + ") after data offset " +
                          std::to_string(data_offset_) + " runs past the end of the " +
                          std::to_string(bytes_.size()) + "-byte file (truncated?)");
    }
    tensor.offset_bytes = *begin;
    tensor.data = bytes_.subspan(*begin, tensor.size_bytes);
  }
  // No two tensors may share bytes: a writer never aliases them, so an overlap means a
  // corrupt (or crafted) directory, and a weight would silently read another's data.
  std::vector<size_t> by_offset(tensors_.size());
  for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
  std::sort(by_offset.begin(), by_offset.end(), [this](size_t a, size_t b) {
    return tensors_[a].offset_bytes < tensors_[b].offset_bytes;
  });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const TensorInfo& prev = tensors_[by_offset[k - 1]];
    const TensorInfo& next = tensors_[by_offset[k]];
    if (next.offset_bytes < prev.offset_bytes + prev.size_bytes) {
      return CorruptError("tensor '" + std::string(next.name) + "' data at offset " +
                          std::to_string(next.offset_bytes) + " overlaps tensor '" +
                          std::string(prev.name) + "' [" + std::to_string(prev.offset_bytes) +
                          ", " + std::to_string(prev.offset_bytes + prev.size_bytes) + ")");
    }
  }
  return Status::Ok();
}

const Value* GgufFile::FindValue(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

static Status Missing(std::string_view key) {
  return NotFoundError("metadata '" + std::string(key) + "' is missing");
}

Result<std::string_view> GgufFile::GetString(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kString) return WrongType(key, *v, "string");
  return v->str;
}

Result<uint64_t> GgufFile::GetU64(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  switch (v->type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      return v->u64;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      if (v->i64 < 0) {
        return InvalidArgumentError("metadata '" + std::string(key) + "' is negative (" +
                                    std::to_string(v->i64) + ")");
      }
      return static_cast<uint64_t>(v->i64);
    default:
      return WrongType(key, *v, "an unsigned integer");
  }
}

Result<uint32_t> GgufFile::GetU32(std::string_view key) const {
  REPRISE_ASSIGN_OR_RETURN(uint64_t v, GetU64(key));
  if (v > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError("metadata '" + std::string(key) + "' = " + std::to_string(v) +
                                " does not fit in 32 bits");
  }
  return static_cast<uint32_t>(v);
}

Result<int64_t> GgufFile::GetI64(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  switch (v->type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
      return static_cast<int64_t>(v->u64);
    case ValueType::kUint64:
      if (v->u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return InvalidArgumentError("metadata '" + std::string(key) + "' is too large");
      }
      return static_cast<int64_t>(v->u64);
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return v->i64;
    default:
      return WrongType(key, *v, "an integer");
  }
}

Result<float> GgufFile::GetF32(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kFloat32 && v->type != ValueType::kFloat64) {
    return WrongType(key, *v, "a float");
  }
  return static_cast<float>(v->f64);
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kBool) return WrongType(key, *v, "bool");
  return v->u64 != 0;
}

Result<std::vector<std::string_view>> GgufFile::GetStringArray(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kArray || v->array_type != ValueType::kString) {
    return WrongType(key, *v, "an array of strings");
  }
  return v->array_strings;
}

Result<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kArray ||
      (v->array_type != ValueType::kFloat32 && v->array_type != ValueType::kFloat64)) {
    return WrongType(key, *v, "an array of floats");
  }
  std::vector<float> out(v->array_count);
  for (uint64_t i = 0; i < v->array_count; ++i) {
    out[i] = v->array_type == ValueType::kFloat32 ? RawElement<float>(*v, i)
                                                   : static_cast<float>(RawElement<double>(*v, i));
  }
  return out;
}

Result<std::vector<int32_t>> GgufFile::GetI32Array(std::string_view key) const {
  const Value* v = FindValue(key);
  if (!v) return Missing(key);
  if (v->type != ValueType::kArray) return WrongType(key, *v, "an array of integers");
  std::vector<int32_t> out(v->array_count);
  for (uint64_t i = 0; i < v->array_count; ++i) {
    int64_t x;
    switch (v->array_type) {
      case ValueType::kInt8: x = RawElement<int8_t>(*v, i); break;
      case ValueType::kUint8: x = RawElement<uint8_t>(*v, i); break;
      case ValueType::kInt16: x = RawElement<int16_t>(*v, i); break;
      case ValueType::kUint16: x = RawElement<uint16_t>(*v, i); break;
      case ValueType::kInt32: x = RawElement<int32_t>(*v, i); break;
      case ValueType::kUint32: x = RawElement<uint32_t>(*v, i); break;
      case ValueType::kInt64: x = RawElement<int64_t>(*v, i); break;
      case ValueType::kUint64: {
        uint64_t u = RawElement<uint64_t>(*v, i);
        x = u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) ? -1 : static_cast<int64_t>(u);
        if (x < 0) {
          return InvalidArgumentError("metadata '" + std::string(key) + "'[" +
                                      std::to_string(i) + "] does not fit in 32 bits");
        }
        break;
      }
      default:
        return WrongType(key, *v, "an array of integers");
    }
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("metadata '" + std::string(key) + "'[" + std::to_string(i) +
                                  "] does not fit in 32 bits");
    }
    out[i] = static_cast<int32_t>(x);
  }
  return out;
}

Result<uint32_t> GgufFile::GetU32Or(std::string_view key, uint32_t fallback) const {
  return HasKey(key) ? GetU32(key) : Result<uint32_t>(fallback);
}
Result<float> GgufFile::GetF32Or(std::string_view key, float fallback) const {
  return HasKey(key) ? GetF32(key) : Result<float>(fallback);
}
Result<bool> GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  return HasKey(key) ? GetBool(key) : Result<bool>(fallback);
}
Result<std::string_view> GgufFile::GetStringOr(std::string_view key,
                                               std::string_view fallback) const {
  return HasKey(key) ? GetString(key) : Result<std::string_view>(fallback);
}

}  // namespace reprise::gguf
