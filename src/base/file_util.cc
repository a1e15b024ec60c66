#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/unique_fd.h"

namespace reprise {

Result<std::string> ReadFileToString(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.is_valid()) return ErrnoError("open " + path, errno);
  std::string out;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read " + path, errno);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

static Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write " + path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.is_valid()) return ErrnoError("create " + temp, errno);
    Status status = WriteAll(fd.get(), contents, temp);
    if (status.ok() && ::fsync(fd.get()) != 0) status = ErrnoError("fsync " + temp, errno);
    if (!status.ok()) {
      ::unlink(temp.c_str());
      return status;
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    return ErrnoError("rename to " + path, saved);
  }
  return Status::Ok();
}

Status CreateDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p(path);
  std::filesystem::path built;
  for (const auto& part : p) {
    built /= part;
    if (std::filesystem::exists(built, ec)) continue;
    if (::mkdir(built.c_str(), 0700) != 0 && errno != EEXIST)
      return ErrnoError("mkdir " + built.string(), errno);
  }
  return Status::Ok();
}

}  // namespace reprise
