#include "support/shared_data.h"

#include <cstdlib>
#include <filesystem>

namespace reprise::testing_support {

std::optional<std::string> SharedDataDir() {
  if (const char* env = std::getenv("REPRISE_DATA_DIR"); env != nullptr && *env != '\0') {
    if (std::filesystem::is_directory(env)) return std::string(env);
    return std::nullopt;
  }
#ifdef REPRISE_DEFAULT_DATA_DIR
  if (std::filesystem::is_directory(REPRISE_DEFAULT_DATA_DIR))
    return std::string(REPRISE_DEFAULT_DATA_DIR);
#endif
  return std::nullopt;
}

std::optional<std::string> SharedDataFile(const std::string& relative) {
  auto dir = SharedDataDir();
  if (!dir) return std::nullopt;
  std::string path = *dir + "/" + relative;
  if (!std::filesystem::exists(path)) return std::nullopt;
  return path;
}

}  // namespace reprise::testing_support
