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

std::string StringOr(const nlohmann::json& object, std::string_view key,
                     std::string_view fallback) {
  if (!object.is_object()) return std::string(fallback);
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::string(fallback);
  return it->get<std::string>();
}

std::string DumpJsonText(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace reprise::convert
