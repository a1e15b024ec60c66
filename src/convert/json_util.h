// Exception-free helpers around nlohmann::json for the importers.
//
// nlohmann::json throws on parse and type errors; these helpers catch at the call site and
// turn what was thrown into a Status naming the file and the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/status.h"

namespace reprise::convert {

// Parses `text` (from `what`, used in messages). Errors: Corrupt.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

// Reads and parses the JSON file at `path`. Errors: NotFound, IoError, Corrupt.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

// object[key] as T, or nullopt when absent or null. Errors: Corrupt when present with the
// wrong type. An integer T takes only JSON integers within its range (nlohmann would truncate
// 2.5 and wrap 2^40 silently); a floating-point T takes any finite JSON number.
template <typename T>
Result<std::optional<T>> OptionalJson(const nlohmann::json& object, std::string_view key,
                                      std::string_view what) {
  if (!object.is_object()) return CorruptError(std::string(what) + ": not a JSON object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<T>();
  const auto wrong = [&](std::string_view why) {
    return CorruptError(std::string(what) + ": '" + std::string(key) + "' " + std::string(why));
  };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (it->is_number_unsigned()) {
      const uint64_t value = it->template get<uint64_t>();
      if (value > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        return wrong("is out of range");
      }
      return std::optional<T>(static_cast<T>(value));
    }
    if (it->is_number_integer()) {
      const int64_t value = it->template get<int64_t>();
      if (value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (value > 0 &&
           static_cast<uint64_t>(value) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        return wrong("is out of range");
      }
      return std::optional<T>(static_cast<T>(value));
    }
    return wrong("must be an integer");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) return wrong("must be a number");
    const double value = it->template get<double>();
    if (!std::isfinite(value) || std::fabs(value) > std::numeric_limits<T>::max()) {
      return wrong("is out of range");
    }
    return std::optional<T>(static_cast<T>(value));
  } else {
    try {
      return std::optional<T>(it->template get<T>());
    } catch (const nlohmann::json::exception& e) {
      return wrong(std::string("has the wrong type (") + e.what() + ")");
    }
  }
}

// object[key] when it is a string, else `fallback` (absent, null, another type, or `object`
// is not an object). Never throws, unlike nlohmann's value().
std::string StringOr(const nlohmann::json& object, std::string_view key, std::string_view fallback);

// `j` as compact JSON text, with invalid UTF-8 replaced (nlohmann's dump() throws on it).
std::string DumpJsonText(const nlohmann::json& j);

// object[key] as T. Errors: NotFound when absent, Corrupt when of the wrong type.
template <typename T>
Result<T> RequiredJson(const nlohmann::json& object, std::string_view key, std::string_view what) {
  REPRISE_ASSIGN_OR_RETURN(std::optional<T> value, OptionalJson<T>(object, key, what));
  if (!value) return NotFoundError(std::string(what) + ": '" + std::string(key) + "' is missing");
  return std::move(*value);
}

}  // namespace reprise::convert
