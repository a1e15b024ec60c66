#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/unique_fd.h"

namespace reprise {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO without a writer (or some devices) would otherwise block
  // forever before fstat could tell that it is not a regular file. It has no effect on the
  // reads of a regular file's mapping.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.is_valid()) return ErrnoError("open " + path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return InvalidArgumentError(path + " is " + kind + ", expected a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) return MappedFile(path, nullptr, 0);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return ErrnoError("mmap " + path, errno);
  return MappedFile(path, static_cast<const uint8_t*>(addr), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_bytes_);
  data_ = nullptr;
  size_bytes_ = 0;
}

void MappedFile::AdviseDontNeed(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_bytes_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = (offset + page - 1) / page * page;
  size_t end = std::min(size_bytes_, offset + length) / page * page;
  if (end <= begin) return;
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

void MappedFile::AdviseRandom(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_bytes_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_bytes_, offset + length);
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_RANDOM);
}

}  // namespace reprise
