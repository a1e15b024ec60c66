#include "convert/json_util.h"

#include "base/file_util.h"

namespace reprise::convert {

Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return CorruptError(std::string(what) + ": not valid JSON");
  return parsed;
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseJson(text, path);
}

}  // namespace reprise::convert
