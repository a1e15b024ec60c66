#include "store/store_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/unique_fd.h"
#include "store/catalog.h"
#include "store/kv_file.h"

namespace reprise::store {
namespace {

Status OpenError(const std::string& path, int saved) {
  const std::string message = "open " + path + ": " + std::strerror(saved);
  if (saved == ELOOP) return InvalidArgumentError(path + " is a symlink; refusing to follow it");
  if (saved == EROFS || saved == EACCES || saved == EPERM) return UnavailableError(message);
  return IoError(message);
}

Status NotOurs(const std::string& path, uid_t owner) {
  return UnavailableError(path + " belongs to uid " + std::to_string(owner) + ", not to uid " +
                          std::to_string(::geteuid()) + "; refusing to use it");
}

// Narrows one existing catalog file; Ok when it does not exist.
Status NarrowFile(const std::string& path, bool create) {
  int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  if (create) flags |= O_CREAT;
  UniqueFd fd(::open(path.c_str(), flags, 0600));
  if (!fd.is_valid() && (errno == EROFS || errno == EACCES)) {
    // A read-only folder or file: check it without changing it.
    fd.Reset(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  }
  if (!fd.is_valid()) {
    if (errno == ENOENT) return Status::Ok();
    return OpenError(path, errno);
  }
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return IoError("stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return InvalidArgumentError(path + " is not a regular file");
  if (info.st_uid != ::geteuid()) return NotOurs(path, info.st_uid);
  if ((info.st_mode & 077) != 0 && ::fchmod(fd.get(), 0600) != 0 && errno != EROFS) {
    return IoError("chmod " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Result<StoreDirCheck> CheckStoreDir(const std::string& dir, bool fix_mode) {
  StoreDirCheck check;
  struct stat info;
  if (::lstat(dir.c_str(), &info) != 0) {
    return IoError("stat " + dir + ": " + std::strerror(errno));
  }
  if (S_ISLNK(info.st_mode)) {
    return InvalidArgumentError("store folder " + dir + " is a symlink; refusing to follow it");
  }
  if (!S_ISDIR(info.st_mode))
    return InvalidArgumentError("store folder " + dir + " is not a folder");
  // Open without following, so that the checks below are about the folder we looked at.
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.is_valid()) return OpenError(dir, errno);
  if (::fstat(fd.get(), &info) != 0) return IoError("stat " + dir + ": " + std::strerror(errno));
  if (info.st_uid != ::geteuid()) return NotOurs("store folder " + dir, info.st_uid);
  if ((info.st_mode & 077) != 0 && fix_mode) {
    if (::fchmod(fd.get(), 0700) != 0) {
      return IoError("chmod " + dir + ": " + std::strerror(errno));
    }
    check.mode_fixed = true;
  }
  return check;
}

Result<std::string> ChooseCacheDir(const CacheDirSources& sources) {
  const auto usable = [](const std::string& path) { return !path.empty() && path[0] == '/'; };
  if (usable(sources.xdg_cache_home)) return sources.xdg_cache_home + "/reprise";
  if (usable(sources.home)) return sources.home + "/.cache/reprise";
  if (usable(sources.passwd_home) && sources.passwd_home != "/") {
    return sources.passwd_home + "/.cache/reprise";
  }
  if (usable(sources.xdg_runtime_dir)) return sources.xdg_runtime_dir + "/reprise";
  return UnavailableError(
      "no private cache folder: set HOME, XDG_CACHE_HOME or XDG_RUNTIME_DIR, or give the store "
      "folder explicitly (a shared folder such as /tmp is never used)");
}

Status PrepareCatalogFiles(const std::string& dir) {
  const std::string catalog = dir + "/" + std::string(kCatalogFileName);
  REPRISE_RETURN_IF_ERROR(NarrowFile(catalog, /*create=*/true));
  REPRISE_RETURN_IF_ERROR(NarrowFile(catalog + "-wal", false));
  return NarrowFile(catalog + "-shm", false);
}

Result<int> DropKvFilePages(const std::string& dir) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) return IoError(dir + ": " + error.message());
  int advised = 0;
  for (const std::filesystem::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(kKvFileSuffix)) continue;
    UniqueFd fd(::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.is_valid()) continue;  // gone meanwhile (evicted), or not ours
    if (::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0) ++advised;
  }
  return advised;
}

}  // namespace reprise::store
