// JSON text for stdout. Strings we print come from files, stores and the command line and may
// hold invalid UTF-8; nlohmann's default dump throws on them, so every command dumps through
// here, which replaces invalid bytes with U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace reprise::cli {

// `j` indented by two spaces; never throws on invalid UTF-8.
inline std::string DumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace reprise::cli
