// ModelConfig: the hyper-parameters of a decoder-only transformer, read from GGUF metadata.
//
// Supported architectures: `llama` (Llama 2/3.x, SmolLM2, TinyStories; RoPE on adjacent
// pairs, optional Llama 3 frequency scaling), `qwen2` (Qwen2/2.5; Q/K/V biases; rotate-half
// RoPE) and `qwen3` (per-head RMSNorm of Q and K; rotate-half RoPE). Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace reprise::model {

enum class Architecture : uint8_t { kLlama, kQwen2, kQwen3 };

std::string_view ArchitectureName(Architecture arch);

// How RoPE pairs the dimensions of a head.
enum class RopeStyle : uint8_t {
  kInterleaved,  // pairs (2i, 2i+1): llama.cpp's "normal" rope, GGUF llama weights
  kNeox,         // pairs (i, i + d/2): rotate-half, HF layout, qwen2/qwen3
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string name;  // general.name, may be empty

  int num_layers = 0;
  int embedding_dim = 0;  // model width (hidden size)
  int ffn_dim = 0;        // MLP inner width
  int num_heads = 0;
  int num_kv_heads = 0;  // GQA: num_heads is a multiple of num_kv_heads
  int head_dim = 0;      // K/Q/V width per head (may differ from embedding_dim / num_heads)
  int vocab_size = 0;
  int context_length = 0;  // trained context, from metadata

  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int rope_dims = 0;  // leading dims of each head that RoPE rotates (usually head_dim)
  RopeStyle rope_style = RopeStyle::kInterleaved;
  // Per-pair frequency divisors (Llama 3 scaling), from the `rope_freqs.weight` tensor;
  // empty when absent. [rope_dims / 2]
  std::vector<float> rope_freq_factors;

  bool has_qkv_bias = false;  // qwen2
  bool has_qk_norm = false;   // qwen3
  bool tied_embeddings = false;  // no output.weight: logits use token_embd.weight

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }

  // Reads and validates the configuration. Errors: Unimplemented (unknown architecture),
  // NotFound (required key missing), Corrupt (inconsistent values or tensor shapes, a
  // "blk.N.*" tensor with N >= block_count, an embedding of more than 2^30 rows).
  static Result<ModelConfig> FromGguf(const gguf::GgufFile& file);

  // A one-line summary: "llama, 5 layers, dim 64, 8 heads (4 kv, head 8), ffn 172, ...".
  std::string Summary() const;
};

// GGUF tensor names, as llama.cpp's converters write them.
namespace tensor_names {
inline constexpr const char* kTokenEmbedding = "token_embd.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kOutput = "output.weight";
inline constexpr const char* kRopeFreqs = "rope_freqs.weight";
// "blk.{layer}.{suffix}", suffix one of: attn_norm.weight, attn_q.weight, attn_k.weight,
// attn_v.weight, attn_output.weight, attn_q.bias, attn_k.bias, attn_v.bias,
// attn_q_norm.weight, attn_k_norm.weight, ffn_norm.weight, ffn_gate.weight, ffn_up.weight,
// ffn_down.weight.
std::string Layer(int layer, std::string_view suffix);
}  // namespace tensor_names

}  // namespace reprise::model
