// Imports a Hugging Face checkpoint folder (Llama, Qwen2, Qwen3) into a GGUF file.
//
// Reads config.json, the safetensors weights (one file or shards listed in
// model.safetensors.index.json; F32/F16/BF16) and the tokenizer. HF stores Q and K of Llama
// models in rotate-half (NeoX) order, while GGUF `llama` files use adjacent pairs: the rows of
// each head are permuted the way llama.cpp's converter does. Qwen2/Qwen3 keep rotate-half
// RoPE and are written unpermuted. Llama 3 rope scaling becomes a rope_freqs.weight tensor.
#pragma once

#include <optional>
#include <string>

#include "base/dtype.h"
#include "base/progress.h"
#include "base/status.h"

namespace reprise::convert {

struct HfImportOptions {
  // Stored type of the weight matrices; nullopt keeps each tensor's source type (BF16 and
  // F16 stay 16-bit, F32 stays F32). Norms and biases are always F32.
  std::optional<DType> weight_type;
  // Told of each layer converted ("converting", layers) and of writing the file.
  ProgressCallback progress;
};

struct ImportSummary {
  std::string architecture;
  int num_tensors = 0;
  int vocab_size = 0;
  uint64_t file_bytes = 0;
};

// Errors: NotFound (missing files), Corrupt (inconsistent config or weights), Unimplemented
// (architectures or features we do not read), IoError.
Result<ImportSummary> ImportHfModel(const std::string& dir, const std::string& out_path,
                                    const HfImportOptions& options);

}  // namespace reprise::convert
