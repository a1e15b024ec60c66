// The operations of a compiled graph: a small IR for decoder-only transformers.
//
// Ops read and write arena buffers (BufferId), weights bound at compile time (pointers into
// the model's packed weights, which outlive the graph) and the per-run inputs of the
// ExecutionContext (token ids, positions, cache slots, the KV cache). Each op processes the
// rows [0, rows) of its buffers, where `rows` is the run's row count (the valid tokens, or the
// whole capacity in strict mode) — or exactly one row after a SelectRowOp.
//
// Ops are plain structs in a std::variant; the Executor (executor.h) maps each to kernels and
// splits its work over the thread pool.
#pragma once

#include <cstdint>
#include <variant>

#include "base/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/packed_matrix.h"
#include "reprise/defaults.h"

namespace reprise::graph {

using BufferId = int32_t;
inline constexpr BufferId kNoBuffer = -1;

// out[m] = the embedding row of token m: unpacked from `packed` when set (a tied table,
// already packed for the output projection), else dequantized from the model file.
struct EmbedOp {
  const kernels::PackedMatrix* packed = nullptr;
  const uint8_t* table = nullptr;  // [vocab rows] in `dtype`, row_bytes apart
  DType dtype = DType::kF32;
  int64_t row_bytes = 0;
  int64_t vocab = 0;
  int64_t dim = 0;
  BufferId out = kNoBuffer;  // float [rows, dim]
};

// out[m] = rmsnorm(in[m]) * weight, written as floats, or as a quantized activation row when
// `quantize_out` (the input of an int8 matmul).
struct RmsNormOp {
  BufferId in = kNoBuffer;  // float [rows, dim]
  BufferId out = kNoBuffer;
  const float* weight = nullptr;  // [dim]
  int64_t dim = 0;
  float eps = 1e-5f;
  bool quantize_out = false;
  int64_t out_row_bytes = 0;  // stride of `out` in bytes
};

// out[m] = the quantized activation row of in[m] (the input of an int8 matmul).
struct QuantizeOp {
  BufferId in = kNoBuffer;  // float [rows, dim]
  BufferId out = kNoBuffer;
  int64_t dim = 0;
  int64_t out_row_bytes = 0;
};

// NPU-style static quantization (docs/design.md §9, llm.npu): out[m] = in[m] quantized with one
// per-tensor scale fixed at calibration (kernels::StaticQuantizeRowFn: values past the range
// saturate), the int8 rows a kI8x8 matmul reads. With outlier channels, their float values
// are also gathered into `outlier_out` (the input of the shadow matmul, see MatMulOp); the
// integer rows keep them too, but the kI8x8 weights of those channels are zero.
struct StaticQuantizeOp {
  BufferId in = kNoBuffer;   // float [rows, dim]
  BufferId out = kNoBuffer;  // int8 rows, out_row_bytes apart
  int64_t dim = 0;
  int64_t out_row_bytes = 0;
  float scale = 0.0f;                 // x ~= scale * q; > 0
  const int32_t* outliers = nullptr;  // [num_outliers] channels, ascending
  int64_t num_outliers = 0;
  BufferId outlier_out = kNoBuffer;  // float [rows, num_outliers]
};

// Calibration: the largest |value| of each channel of in's valid rows, folded into the
// executor's ActivationStats (executor.h) at `point`. Computes nothing else.
struct ObserveActivationsOp {
  BufferId in = kNoBuffer;  // float [rows, dim]
  int64_t dim = 0;
  int point = 0;
};

// out[m, n] (+)= sum_k in[m, k] * W[n, k]. `in` holds floats or quantized rows as the
// matrix's format wants (kernels::UsesQuantizedActivations, UsesStaticInt8Activations).
struct MatMulOp {
  const kernels::PackedMatrix* matrix = nullptr;
  BufferId in = kNoBuffer;
  int64_t in_row_bytes = 0;
  BufferId out = kNoBuffer;  // float rows out_stride floats apart; this product fills
  int64_t out_stride = 0;    // columns [out_column, out_column + matrix->rows) of each row
  int64_t out_column = 0;
  bool accumulate = false;  // residual connection: out += product
  // kI8x8: the per-tensor scale `in` was quantized with (StaticQuantizeOp::scale).
  float activation_scale = 0.0f;
  // Shadow outlier execution: a float matrix [matrix->rows x outliers] (the weights of the
  // outlier channels, which are zero in `matrix`), multiplied by the outlier values
  // (StaticQuantizeOp::outlier_out) and added to the same outputs, by the same threads right
  // after the integer part of their rows.
  const kernels::PackedMatrix* shadow = nullptr;
  BufferId shadow_in = kNoBuffer;
};

// Per token, on the fused QKV projection: adds biases (qwen2), RMS-normalises each Q and K
// head (qwen3), rotates Q and K (RoPE at the token's position), and (with `store_kv`) stores
// K and V as f16 in the cache slot of the row (padding rows store nothing).
struct QkvPostOp {
  int layer = 0;
  BufferId qkv = kNoBuffer;  // float [rows, q_dim + 2 * kv_dim]: Q | K | V
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  const float* q_bias = nullptr;  // [q_dim] or null
  const float* k_bias = nullptr;
  const float* v_bias = nullptr;
  const float* q_norm = nullptr;  // [head_dim] or null
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  const float* rope_inv_freq = nullptr;  // [rope_dims / 2]
  int64_t rope_dims = 0;
  kernels::RopeStyle rope_style = kernels::RopeStyle::kInterleaved;
  bool store_kv = true;
};

// Stores K and V of each row (already post-processed by a QkvPostOp that did not store them)
// into the row's cache slot.
struct StoreKvOp {
  int layer = 0;
  BufferId qkv = kNoBuffer;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
};

// Selective recompute, step 2 (docs/design.md §2): the deviation of each row's fresh K (and V, with
// `include_v`) from what its cache slot holds: mean over heads and dims of the squared
// difference, in float. Padding rows get -inf, forced rows +inf.
struct DeviationOp {
  int layer = 0;
  BufferId qkv = kNoBuffer;  // fresh Q|K|V rows, K after RoPE
  BufferId out = kNoBuffer;  // float [rows]
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  bool include_v = false;
};

// Selective recompute, step 4: picks the `k` rows of largest deviation (all forced rows, even
// beyond k; ties to the lower row), in row order, as the rows the following ops run on.
struct SelectRowsOp {
  BufferId deviation = kNoBuffer;  // float [rows]
  int64_t k = 0;
};

// out[j] = in[selected row j]: moves rows into the compact layout of the selected phase.
struct GatherRowsOp {
  BufferId in = kNoBuffer;
  BufferId out = kNoBuffer;
  int64_t row_bytes = 0;
};

// out[m] = attention of Q row m over the layer's cache (masked by position).
struct AttentionOp {
  int layer = 0;
  BufferId qkv = kNoBuffer;  // Q is the first q_dim floats of each row
  int64_t qkv_stride = 0;    // floats
  BufferId out = kNoBuffer;  // float [rows, q_dim]
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 0.0f;
};

// Query-aware selection (docs/design.md §2): the attention the valid rows (the prompt's last tokens)
// pay, at `layer`, to each cached slot before the first of them, as the mean over rows and
// query heads of softmax(scale * q.k) — the softmax taken over those slots (visible and at
// positions up to the row's) and the rows' own fresh keys up to their own. Written to
// ExecutionContext::attention_scores(). At most kMaxProbeRows rows, and at most kMaxProbeGroup
// query heads per kv head.
inline constexpr int kMaxProbeRows = kMaxQueryProbeTokens;
inline constexpr int64_t kMaxProbeGroup = 32;
struct AttentionScoreOp {
  int layer = 0;
  BufferId qkv = kNoBuffer;  // fresh Q|K|V rows after RoPE
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 0.0f;
};

// h[m] = silu(gate[m]) * up[m] where gate|up are the two halves of gu's row; written as
// floats or quantized rows (the input of the down projection).
struct SwiGluOp {
  BufferId gate_up = kNoBuffer;  // float [rows, 2 * ffn]
  BufferId out = kNoBuffer;
  int64_t ffn = 0;
  bool quantize_out = false;
  int64_t out_row_bytes = 0;
};

// out[0] = in[last valid row]: from here on ops run on one row (the next token's logits).
struct SelectRowOp {
  BufferId in = kNoBuffer;
  BufferId out = kNoBuffer;
  int64_t row_bytes = 0;
};

using Op = std::variant<EmbedOp, RmsNormOp, QuantizeOp, MatMulOp, QkvPostOp, StoreKvOp, AttentionOp,
                        SwiGluOp, SelectRowOp, DeviationOp, SelectRowsOp, GatherRowsOp,
                        AttentionScoreOp, StaticQuantizeOp, ObserveActivationsOp>;

// The buffers an op reads and writes (for lifetime analysis).
void OpBuffers(const Op& op, BufferId out_ids[4], int& count);

const char* OpName(const Op& op);

}  // namespace reprise::graph
