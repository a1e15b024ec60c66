// Imports a llama2.c checkpoint (model .bin + tokenizer .bin) into a GGUF `llama` file.
//
// The llama2.c model file is a header of 7 int32 (dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size — negative when the classifier is stored separately — and seq_len)
// followed by float32 weights in a fixed order, rows [out][in]. llama2.c's RoPE rotates
// adjacent pairs, which is GGUF's `llama` layout, so no weight is permuted. The tokenizer file
// is uint32 max_token_length, then per token: float32 score, uint32 length, bytes.
#pragma once

#include <optional>
#include <string>

#include "base/dtype.h"
#include "base/status.h"
#include "convert/hf_importer.h"

namespace reprise::convert {

struct Llama2cImportOptions {
  // Stored type of the weight matrices (default F32, the checkpoint's own precision).
  std::optional<DType> weight_type;
  // Told of each tensor converted ("converting", tensors) and of writing the file.
  ProgressCallback progress;
};

// Errors: NotFound, Corrupt (header values out of range, file size not matching the header,
// malformed tokenizer), IoError.
Result<ImportSummary> ImportLlama2c(const std::string& model_path,
                                    const std::string& tokenizer_path, const std::string& out_path,
                                    const Llama2cImportOptions& options);

}  // namespace reprise::convert
