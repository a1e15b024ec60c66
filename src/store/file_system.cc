#include "store/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/unique_fd.h"

namespace reprise::store {
namespace {

// The store's error mapping: a full disk and a read-only or forbidden folder are conditions
// callers handle (stop writing, serve from memory), so they get their own codes.
Status PosixError(std::string_view operation, const std::string& path, int errno_value) {
  std::string message(operation);
  message += " ";
  message += path;
  message += ": ";
  message += std::strerror(errno_value);
  switch (errno_value) {
    case ENOSPC:
    case EDQUOT:
      return ResourceExhaustedError(std::move(message));
    case EROFS:
    case EACCES:
    case EPERM:
      return UnavailableError(std::move(message));
    case ENOENT:
      return NotFoundError(std::move(message));
    default:
      return IoError(std::move(message));
  }
}

Status WriteAll(int fd, std::span<const uint8_t> data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError("write", path, errno);
    }
    data = data.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status FsyncFd(int fd, const std::string& path) {
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    // Some file systems cannot fsync a folder; that is not a durability failure we can act on.
    if (errno == EINVAL) return Status::Ok();
    return PosixError("fsync", path, errno);
  }
  return Status::Ok();
}

// A file already read into memory (FileSystem::OpenForRead's default).
class BufferedReadableFile final : public ReadableFile {
 public:
  explicit BufferedReadableFile(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<size_t> Read(std::span<uint8_t> out) override {
    const size_t n = std::min(out.size(), bytes_.size() - at_);
    if (n > 0) std::memcpy(out.data(), bytes_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(UniqueFd fd, uint64_t size, std::string path)
      : fd_(std::move(fd)), size_(size), path_(std::move(path)) {}
  uint64_t size() const override { return size_; }
  Result<size_t> Read(std::span<uint8_t> out) override {
    while (true) {
      const ssize_t n = ::read(fd_.get(), out.data(), out.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return PosixError("read", path_, errno);
    }
  }

 private:
  UniqueFd fd_;
  uint64_t size_;
  std::string path_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Status CreateDir(const std::string& path) override {
    if (path.empty()) return InvalidArgumentError("CreateDir: empty path");
    // Create each missing ancestor in turn, from the root down.
    size_t next = path.front() == '/' ? 1 : 0;
    while (next <= path.size()) {
      size_t end = path.find('/', next);
      if (end == std::string::npos) end = path.size();
      const std::string prefix = path.substr(0, end);
      next = end + 1;
      if (end > 0 && path[end - 1] == '/') continue;  // "a//b"
      if (::mkdir(prefix.c_str(), 0700) == 0) continue;
      const int saved = errno;
      if (saved != EEXIST) return PosixError("mkdir", prefix, saved);
      struct stat info;
      if (::stat(prefix.c_str(), &info) != 0) return PosixError("stat", prefix, errno);
      if (!S_ISDIR(info.st_mode))
        return IoError("mkdir " + prefix + ": exists and is not a folder");
    }
    return Status::Ok();
  }

  Status WriteFile(const std::string& path, std::span<const uint8_t> data, bool sync) override {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd.is_valid()) return PosixError("create", path, errno);
    struct stat info;
    if (::fstat(fd.get(), &info) != 0) return PosixError("stat", path, errno);
    // Never unlink what is not a plain file (a device such as /dev/full, a FIFO).
    const bool is_regular = S_ISREG(info.st_mode);
    Status status = WriteAll(fd.get(), data, path);
    if (status.ok() && sync) status = FsyncFd(fd.get(), path);
    if (status.ok() && ::close(fd.Release()) != 0) status = PosixError("close", path, errno);
    if (!status.ok() && is_regular) {
      // A partial file is useless and, on a full disk, holds space the caller needs back.
      fd.Reset();
      ::unlink(path.c_str());
    }
    return status;
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError("rename " + from + " to", to, errno);
    }
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.is_valid()) return PosixError("open folder", path, errno);
    return FsyncFd(fd.get(), path);
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) == 0) return Status::Ok();
    const int saved = errno;
    // unlink refuses folders (EISDIR on Linux, EPERM elsewhere): an empty one goes too.
    if ((saved == EISDIR || saved == EPERM) && ::rmdir(path.c_str()) == 0) return Status::Ok();
    return PosixError("remove", path, saved);
  }

  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.is_valid()) return PosixError("open", path, errno);
    struct stat info;
    if (::fstat(fd.get(), &info) != 0) return PosixError("stat", path, errno);
    if (!S_ISREG(info.st_mode)) return IoError("read " + path + ": not a regular file");
    std::vector<uint8_t> out(static_cast<size_t>(info.st_size));
    size_t filled = 0;
    while (true) {
      if (filled == out.size()) out.resize(out.size() + 4096);  // the file grew meanwhile
      const ssize_t n = ::read(fd.get(), out.data() + filled, out.size() - filled);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("read", path, errno);
      }
      if (n == 0) break;
      filled += static_cast<size_t>(n);
    }
    out.resize(filled);
    return out;
  }

  Result<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.is_valid()) return PosixError("open", path, errno);
    struct stat info;
    if (::fstat(fd.get(), &info) != 0) return PosixError("stat", path, errno);
    if (!S_ISREG(info.st_mode)) return IoError("read " + path + ": not a regular file");
    // Larger read-ahead: KV files are read once, front to back.
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<ReadableFile>(std::make_unique<PosixReadableFile>(
        std::move(fd), static_cast<uint64_t>(info.st_size), path));
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return PosixError("open folder", path, errno);
    std::vector<std::string> names;
    Status status;
    while (true) {
      errno = 0;
      const dirent* entry = ::readdir(dir);
      if (entry == nullptr) {
        if (errno != 0) status = PosixError("list", path, errno);
        break;
      }
      bool is_regular = entry->d_type == DT_REG;
      if (entry->d_type == DT_UNKNOWN) {
        struct stat info;
        const std::string child = path + "/" + entry->d_name;
        is_regular = ::lstat(child.c_str(), &info) == 0 && S_ISREG(info.st_mode);
      }
      if (is_regular) names.emplace_back(entry->d_name);
    }
    ::closedir(dir);
    if (!status.ok()) return status;
    return names;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(info.st_size);
  }
};

}  // namespace

Result<std::unique_ptr<ReadableFile>> FileSystem::OpenForRead(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFile(path));
  return std::unique_ptr<ReadableFile>(std::make_unique<BufferedReadableFile>(std::move(bytes)));
}

std::unique_ptr<FileSystem> NewPosixFileSystem() { return std::make_unique<PosixFileSystem>(); }

}  // namespace reprise::store
