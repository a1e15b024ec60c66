#include "workload/json_input.h"

#include "base/file_util.h"

namespace reprise::workload {
namespace {

Result<const nlohmann::json*> Field(const nlohmann::json& object, std::string_view key,
                                    std::string_view what) {
  if (!object.is_object()) return CorruptError(std::string(what) + ": not a JSON object");
  auto it = object.find(key);
  if (it == object.end()) {
    return CorruptError(std::string(what) + ": field '" + std::string(key) + "' is missing");
  }
  return &*it;
}

Status WrongType(std::string_view key, std::string_view what, std::string_view expected,
                 const nlohmann::json& value) {
  return CorruptError(std::string(what) + ": field '" + std::string(key) + "' should be " +
                      std::string(expected) + ", is " + value.type_name());
}

}  // namespace

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return CorruptError(path + ": not valid JSON");
  return parsed;
}

Result<std::vector<nlohmann::json>> ReadJsonLinesFile(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::vector<nlohmann::json> values;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      return CorruptError(path + ": line " + std::to_string(line_number) + " is not valid JSON");
    }
    values.push_back(std::move(parsed));
  }
  return values;
}

Result<const nlohmann::json*> JsonObjectField(const nlohmann::json& object, std::string_view key,
                                              std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* value, Field(object, key, what));
  if (!value->is_object()) return WrongType(key, what, "an object", *value);
  return value;
}

Result<const nlohmann::json*> JsonArrayField(const nlohmann::json& object, std::string_view key,
                                             std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* value, Field(object, key, what));
  if (!value->is_array()) return WrongType(key, what, "an array", *value);
  return value;
}

Result<std::string> JsonStringField(const nlohmann::json& object, std::string_view key,
                                    std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* value, Field(object, key, what));
  if (!value->is_string()) return WrongType(key, what, "a string", *value);
  return value->get_ref<const std::string&>();
}

Result<int64_t> JsonIntField(const nlohmann::json& object, std::string_view key,
                             std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* value, Field(object, key, what));
  if (!value->is_number_integer()) return WrongType(key, what, "an integer", *value);
  return value->get<int64_t>();
}

Result<std::string> JsonScalarAsString(const nlohmann::json& object, std::string_view key,
                                       std::string_view what) {
  if (!object.is_object()) return CorruptError(std::string(what) + ": not a JSON object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get_ref<const std::string&>();
  if (it->is_structured()) {
    return CorruptError(std::string(what) + ": field '" + std::string(key) +
                        "' should be a scalar, is " + it->type_name());
  }
  return it->dump();
}

}  // namespace reprise::workload
