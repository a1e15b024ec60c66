// `make-model`: GGUF files with the shapes of real architectures and random weights.
//
// For tests and benchmarks: the tensors, metadata and tokenizer are those of a real model
// family (so the file loads here and in llama.cpp), the weights are random from a fixed seed.
// The tokenizer is synthetic (an SPM vocabulary of byte tokens and generated pieces) unless a
// tiktoken rank file gives the real Llama 3 or Qwen vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/progress.h"
#include "base/status.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {

struct ModelShape {
  std::string name;  // "smollm2-135m"
  std::string arch;  // GGUF architecture: llama, qwen2, qwen3
  int embedding_dim, num_layers, num_heads, num_kv_heads, head_dim, ffn_dim, vocab_size;
  int context_length;
  float rope_theta, rms_eps;
  bool tied_embeddings;
  bool llama3_rope_scaling;
};

// The shapes `make-model --shape` knows: tiny, tiny-qwen2, tiny-qwen3, tiny-llama3, tiny-256,
// smollm2-135m,
// qwen2.5-0.5b, qwen3-0.6b, llama3.2-1b.
const std::vector<ModelShape>& KnownShapes();
std::optional<ModelShape> FindShape(const std::string& name);

// The most layers `num_layers` may ask for (the largest real shapes have about 130).
inline constexpr int kMaxMadeLayers = 1024;

struct MakeModelOptions {
  std::string shape = "tiny";
  DType weight_type = DType::kF16;  // F32, F16, BF16, Q8_0, Q4_0 (and the other writable types)
  // With weight_type Q4_K or Q5_K: the mix llama.cpp calls Q4_K_M or Q5_K_M, the forms most
  // published GGUF files take — the output matrix (the token embedding when it is tied) and
  // the attn_v and ffn_down matrices of the layers UsesMoreBits picks in Q6_K, the rest in
  // weight_type.
  bool k_m_mix = false;
  std::string vocab_path;  // tiktoken rank file; empty = synthetic vocabulary
  uint64_t seed = 1234;
  // Overrides the shape's layer count (small test files); in [1, kMaxMadeLayers].
  std::optional<int> num_layers;
  // Told of each layer made ("making weights", layers) and of writing the file.
  ProgressCallback progress;
};

struct MakeModelSummary {
  ModelShape shape;
  uint64_t num_parameters = 0;
  uint64_t file_bytes = 0;
  std::string vocab_description;
};

// The layers whose attn_v and ffn_down get Q6_K in a Q4_K_M mix: the first and last eighth of
// the `num_layers` layers and every third layer between them.
bool UsesMoreBits(int layer, int num_layers);

// A synthetic SPM vocabulary of `num_tokens` entries: <unk>, <s>, </s>, the 256 byte tokens,
// then generated pieces with decreasing scores. Every text can be encoded (byte fallback).
tokenizer::Vocab SyntheticVocab(int num_tokens);

// Errors: InvalidArgument (unknown shape, type that cannot be written, num_layers out of range),
// NotFound/Corrupt (vocab file), IoError.
Result<MakeModelSummary> MakeModel(const MakeModelOptions& options, const std::string& out_path);

}  // namespace reprise::convert
