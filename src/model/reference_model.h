// ReferenceModel: the plain float forward pass, the oracle every faster path is tested against.
//
// Load() dequantizes every weight of a GGUF model to float32 once (memory is not a concern
// here); Forward() runs tokens one at a time through the transformer, reading top to bottom
// like llama2.c's forward(): embedding, then per layer RMSNorm, Q/K/V projections (+ qwen2
// biases, + qwen3 per-head Q/K RMSNorm), RoPE, causal GQA attention over a ReferenceCache,
// output projection and residual, RMSNorm, SwiGLU MLP and residual; final RMSNorm and logits.
// Every step is a function of reference_ops.h. Dot products accumulate in double.
//
// Supports the architectures of ModelConfig (llama, qwen2, qwen3) and the tensor types of
// kernels::DequantizeRow. Not fast: use it in tests, not in the serving path.
//
// Thread-compatible: const methods may run concurrently on different caches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace reprise::model {

// The keys and values of the tokens a ReferenceModel has run, one slot per token, in order.
// Plain data: tests may inspect and edit it (e.g. re-rotate K between positions).
struct ReferenceCache {
  int capacity_tokens = 0;  // slots allocated
  int num_tokens = 0;       // slots filled: [0, num_tokens)
  std::vector<float> k;     // [num_layers, capacity_tokens, kv_dim], K after RoPE
  std::vector<float> v;     // [num_layers, capacity_tokens, kv_dim]
};

class ReferenceModel {
 public:
  // Reads the configuration and dequantizes every weight to float32. Does not keep a
  // reference to `file`. Errors: those of ModelConfig::FromGguf; Unimplemented for a tensor
  // type that cannot be dequantized; Corrupt for a tensor with an unexpected shape or size,
  // or a NaN or infinite weight (see weight_check.h).
  static Result<ReferenceModel> Load(const gguf::GgufFile& file);

  ReferenceModel(ReferenceModel&&) noexcept = default;
  ReferenceModel& operator=(ReferenceModel&&) noexcept = default;
  ReferenceModel(const ReferenceModel&) = delete;
  ReferenceModel& operator=(const ReferenceModel&) = delete;

  const ModelConfig& config() const { return config_; }

  // An empty cache with room for `capacity_tokens` tokens. Requires: capacity_tokens >= 0.
  ReferenceCache NewCache(int capacity_tokens) const;

  // Runs `tokens` at positions cache.num_tokens, cache.num_tokens + 1, ..., appends their K
  // and V to the cache and returns the logits after every token: [tokens.size(), vocab_size]
  // row-major. Errors (InvalidArgument; the cache is then unchanged): a token id outside
  // [0, vocab_size), more tokens than the cache has room for, a cache of another shape.
  Result<std::vector<float>> Forward(ReferenceCache& cache, std::span<const int32_t> tokens) const;

  // As Forward, but token i uses RoPE position positions[i] while it is still written to
  // cache slot cache.num_tokens + i; attention is causal over slots (token i sees slots
  // [0, cache.num_tokens + i]), whatever the positions of the cached keys. Errors: those of
  // Forward, and InvalidArgument when positions.size() != tokens.size() or a position is
  // negative.
  Result<std::vector<float>> ForwardAt(ReferenceCache& cache, std::span<const int32_t> tokens,
                                       std::span<const int32_t> positions) const;

 private:
  // A weight matrix in GGUF's row layout: num_rows rows ("out") of num_cols values ("in").
  struct Matrix {
    int num_rows = 0;
    int num_cols = 0;
    std::vector<float> values;  // [num_rows, num_cols]
  };
  struct LayerWeights {
    std::vector<float> attn_norm;       // [embedding_dim]
    Matrix wq;                          // [q_dim, embedding_dim]
    Matrix wk;                          // [kv_dim, embedding_dim]
    Matrix wv;                          // [kv_dim, embedding_dim]
    Matrix wo;                          // [embedding_dim, q_dim]
    std::vector<float> bq, bk, bv;      // [q_dim], [kv_dim], [kv_dim]; empty without biases
    std::vector<float> q_norm, k_norm;  // [head_dim]; empty without qk norm
    std::vector<float> ffn_norm;        // [embedding_dim]
    Matrix w_gate;                      // [ffn_dim, embedding_dim]
    Matrix w_up;                        // [ffn_dim, embedding_dim]
    Matrix w_down;                      // [embedding_dim, ffn_dim]
  };

  ReferenceModel() = default;

  Status CheckCache(const ReferenceCache& cache, size_t num_new_tokens) const;
  // Runs one token at `position` into cache slot `slot`; writes its logits to `logits`.
  void ForwardOne(ReferenceCache& cache, int32_t token, int64_t position, int slot,
                  std::span<float> logits) const;
  void Attention(const LayerWeights& layer, int layer_index, ReferenceCache& cache,
                 int64_t position, int slot, std::span<float> x) const;
  void FeedForward(const LayerWeights& layer, std::span<float> x) const;
  const Matrix& OutputMatrix() const { return config_.tied_embeddings ? token_embd_ : output_; }

  ModelConfig config_;
  Matrix token_embd_;                 // [vocab_size, embedding_dim]
  std::vector<LayerWeights> layers_;  // [num_layers]
  std::vector<float> output_norm_;    // [embedding_dim]
  Matrix output_;                     // [vocab_size, embedding_dim]; empty when tied
};

}  // namespace reprise::model
