// Exception-free helpers around nlohmann::json for the importers.
//
// nlohmann::json throws on parse and type errors; these helpers catch at the call site and
// turn what was thrown into a Status naming the file and the key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace reprise::convert {

// Parses `text` (from `what`, used in messages). Errors: Corrupt.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

// Reads and parses the JSON file at `path`. Errors: NotFound, IoError, Corrupt.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

// object[key] as T, or nullopt when absent or null. Errors: Corrupt when present with the
// wrong type.
template <typename T>
Result<std::optional<T>> OptionalJson(const nlohmann::json& object, std::string_view key,
                                      std::string_view what) {
  if (!object.is_object()) return CorruptError(std::string(what) + ": not a JSON object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<T>();
  try {
    return std::optional<T>(it->get<T>());
  } catch (const nlohmann::json::exception& e) {
    return CorruptError(std::string(what) + ": '" + std::string(key) + "' has the wrong type (" +
                        e.what() + ")");
  }
}

// object[key] as T. Errors: NotFound when absent, Corrupt when of the wrong type.
template <typename T>
Result<T> RequiredJson(const nlohmann::json& object, std::string_view key, std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(std::optional<T> value, OptionalJson<T>(object, key, what));
  if (!value) return NotFoundError(std::string(what) + ": '" + std::string(key) + "' is missing");
  return std::move(*value);
}

}  // namespace reprise::convert
