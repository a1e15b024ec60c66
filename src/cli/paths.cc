#include "cli/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace reprise::cli {

std::optional<std::string> FindSharedDataDir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("REPRISE_DATA_DIR"); env && *env) {
    if (fs::is_directory(env)) return std::string(env);
    return std::nullopt;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build/reprise -> <checkout>/build -> <checkout>/../shared/data
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      fs::path candidate = dir / ".." / "shared" / "data";
      if (fs::is_directory(candidate / "models")) return fs::weakly_canonical(candidate).string();
    }
  }
  if (fs::is_directory("../shared/data/models")) {
    return fs::weakly_canonical("../shared/data").string();
  }
  return std::nullopt;
}

std::string CacheDir() {
  std::string dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = std::string(xdg) + "/reprise";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/.cache/reprise";
  } else {
    dir = "/tmp/reprise-cache-" + std::to_string(::getuid());
  }
  CreateDirectories(dir).IgnoreError();
  return dir;
}

}  // namespace reprise::cli
