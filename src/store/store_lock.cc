#include "store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace reprise::store {

Result<StoreLock> StoreLock::Open(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kLockFileName);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.is_valid()) {
    const int saved = errno;
    if (saved == EROFS || saved == EACCES || saved == EPERM) {
      return UnavailableError("open " + path + ": " + std::strerror(saved));
    }
    return ErrnoError("open " + path, saved);
  }
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return ErrnoError("stat " + path, errno);
  if (!S_ISREG(info.st_mode)) return IoError("lock file " + path + " is not a regular file");
  return StoreLock(std::move(fd));
}

Status StoreLock::LockShared(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (::flock(fd_.get(), LOCK_SH | LOCK_NB) == 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return ErrnoError("flock (shared)", errno);
    if (std::chrono::steady_clock::now() >= deadline) {
      return UnavailableError("the store is locked exclusively by another process (recovery)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<bool> StoreLock::TryLockExclusive() {
  while (true) {
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    return ErrnoError("flock (exclusive)", errno);
  }
}

void StoreLock::Unlock() {
  if (fd_.is_valid()) ::flock(fd_.get(), LOCK_UN);
}

}  // namespace reprise::store
