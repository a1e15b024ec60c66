// InspectModel: what `reprise inspect` prints about a GGUF model file.
#pragma once

#include <string>

#include "base/status.h"
#include "reprise/engine.h"

namespace reprise::tools {

struct ModelReport {
  std::string path;
  ModelInfo info;  // InspectModelFile's: the file, config, tokenizer, and why it cannot run

  std::string ToText() const;
  // Invalid UTF-8 in strings (names from the file, the path) becomes U+FFFD.
  std::string ToJson() const;
};

// Opens and validates the file. A file that parses but cannot run (unknown architecture,
// missing tokenizer) still gets a report, with the reason in config_error / tokenizer_error.
// Errors: NotFound, IoError, Corrupt (the GGUF container itself is malformed).
Result<ModelReport> InspectModel(const std::string& path);

}  // namespace reprise::tools
