// Exception-free reading of the workload data files (JSON and JSON Lines) with nlohmann::json.
//
// Parsing uses nlohmann's non-throwing mode, and every field access checks the type first,
// so nothing here can throw. Errors name the file and the field: a data file that lacks a
// field or has the wrong type is Corrupt (not NotFound, which is kept for missing files).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace reprise::workload {

// Reads and parses a JSON file. Errors: NotFound (with the path), IoError, Corrupt.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

// Reads a JSON Lines file: one JSON value per non-blank line. Errors: NotFound, IoError,
// Corrupt naming the line.
Result<std::vector<nlohmann::json>> ReadJsonLinesFile(const std::string& path);

// object[key], checked to exist and have the given type. `what` names the object in
// messages, e.g. "locomo10.json: sample 3". Errors: Corrupt.
Result<const nlohmann::json*> JsonObjectField(const nlohmann::json& object, std::string_view key,
                                              std::string_view what);
Result<const nlohmann::json*> JsonArrayField(const nlohmann::json& object, std::string_view key,
                                             std::string_view what);
Result<std::string> JsonStringField(const nlohmann::json& object, std::string_view key,
                                    std::string_view what);
Result<int64_t> JsonIntField(const nlohmann::json& object, std::string_view key,
                             std::string_view what);

// object[key] as a string when it is one, its JSON text when it is another scalar (an answer
// given as a number), "" when absent or null. Errors: Corrupt when `object` is not an object.
Result<std::string> JsonScalarAsString(const nlohmann::json& object, std::string_view key,
                                       std::string_view what);

}  // namespace reprise::workload
