#include "cli/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "base/file_util.h"
#include "reprise/store_admin.h"

namespace reprise::cli {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

// The home folder of the effective user from the password database, or "".
std::string PasswdHome() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd entry;
  struct passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || found->pw_dir == nullptr) {
    return std::string();
  }
  return std::string(found->pw_dir);
}

}  // namespace

std::optional<std::string> FindSharedDataDir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("REPRISE_DATA_DIR"); env && *env) {
    std::error_code ec;
    if (fs::is_directory(env, ec)) return std::string(env);
    return std::nullopt;
  }
  // Every call takes an error_code: a path we cannot read is "not here", never an exception.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build/reprise -> <checkout>/build -> <checkout>/../shared/data
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      fs::path candidate = dir / ".." / "shared" / "data";
      if (fs::is_directory(candidate / "models", ec)) {
        fs::path canonical = fs::weakly_canonical(candidate, ec);
        if (!ec) return canonical.string();
      }
    }
  }
  if (fs::is_directory("../shared/data/models", ec)) {
    fs::path canonical = fs::weakly_canonical("../shared/data", ec);
    if (!ec) return canonical.string();
  }
  return std::nullopt;
}

Result<std::string> FindCacheDir() {
  CacheDirEnvironment sources;
  sources.xdg_cache_home = Env("XDG_CACHE_HOME");
  sources.home = Env("HOME");
  if (sources.xdg_cache_home.empty() && sources.home.empty()) sources.passwd_home = PasswdHome();
  sources.xdg_runtime_dir = Env("XDG_RUNTIME_DIR");
  REPRISE_ASSIGN_OR_RETURN(std::string dir, ChooseCacheDir(sources));
  REPRISE_RETURN_IF_ERROR(CreateDirectories(dir));
  return dir;
}

std::optional<std::string> RedisPasswordFromEnvironment() {
  const char* value = std::getenv(kRedisPasswordVariable);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace reprise::cli
