// InspectModel: what `reprise inspect` prints about a GGUF model file.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"

namespace reprise::tools {

struct ModelReport {
  std::string path;
  uint64_t file_bytes = 0;
  uint32_t gguf_version = 0;
  std::string architecture;
  std::string name;
  std::string config_summary;      // hyper-parameters in one line
  std::string config_error;        // why the model cannot run here, when it cannot
  uint64_t num_parameters = 0;
  // Counts are 64-bit: a file may declare more than 2^31 of anything.
  std::map<std::string, uint64_t> tensor_type_counts;  // "q8_0" -> 210
  uint64_t num_tensors = 0;
  uint64_t num_metadata = 0;
  std::string tokenizer_kind;      // "SPM (llama)", "BPE (gpt2, pre qwen2)"
  uint64_t tokenizer_size = 0;
  std::string tokenizer_error;
  std::string chat_format;         // how --chat formats prompts for this model

  std::string ToText() const;
  // Invalid UTF-8 in strings (names from the file, the path) becomes U+FFFD.
  std::string ToJson() const;
};

// Opens and validates the file. A file that parses but cannot run (unknown architecture,
// missing tokenizer) still gets a report, with the reason in config_error / tokenizer_error.
// Errors: NotFound, IoError, Corrupt (the GGUF container itself is malformed).
Result<ModelReport> InspectModel(const std::string& path);

}  // namespace reprise::tools
