#include "model/graph_compiler.h"

#include <cmath>

#include "kernels/activation_quant.h"
#include "kernels/attention.h"

namespace reprise::model {
namespace {

using graph::BufferId;
using graph::GraphBuilder;
using graph::kNoBuffer;

bool NeedsQ8(const OwnedPackedMatrix* m) {
  return m && kernels::UsesQuantizedActivations(m->view.format);
}
bool NeedsF32(const OwnedPackedMatrix* m) {
  return m && !kernels::UsesQuantizedActivations(m->view.format);
}

// The same activation rows in the forms the consuming matrices read.
struct Activation {
  BufferId f32 = kNoBuffer;
  BufferId q8 = kNoBuffer;
  int64_t dim = 0;
};

class LayerEmitter {
 public:
  LayerEmitter(const PackedWeights& w, GraphBuilder& b, int capacity)
      : w_(w), c_(w.config()), b_(b), capacity_(capacity) {}

  // Buffers for `dim`-wide activations read by `consumers`.
  Activation NewActivation(const std::string& name, int64_t dim, int rows,
                           std::initializer_list<const OwnedPackedMatrix*> consumers) {
    Activation a;
    a.dim = dim;
    bool q8 = false, f32 = false;
    for (const OwnedPackedMatrix* m : consumers) {
      q8 |= NeedsQ8(m);
      f32 |= NeedsF32(m);
    }
    if (q8) a.q8 = b_.NewBuffer(name + ".q8", rows * kernels::QuantizedRowBytes(dim));
    if (f32) a.f32 = b_.NewBuffer(name, rows * dim * static_cast<int64_t>(sizeof(float)));
    return a;
  }

  void Norm(BufferId in, const std::vector<float>& weight, const Activation& out) {
    if (out.q8 != kNoBuffer) {
      b_.Add(graph::RmsNormOp{in, out.q8, weight.data(), out.dim, c_.rms_eps, true,
                              kernels::QuantizedRowBytes(out.dim)});
    }
    if (out.f32 != kNoBuffer) {
      b_.Add(graph::RmsNormOp{in, out.f32, weight.data(), out.dim, c_.rms_eps, false,
                              out.dim * static_cast<int64_t>(sizeof(float))});
    }
  }

  void MatMul(const OwnedPackedMatrix& m, const Activation& in, BufferId out, int64_t out_stride,
              int64_t out_column, bool accumulate) {
    const bool q8 = NeedsQ8(&m);
    b_.Add(graph::MatMulOp{&m.view, q8 ? in.q8 : in.f32,
                           q8 ? kernels::QuantizedRowBytes(in.dim)
                              : in.dim * static_cast<int64_t>(sizeof(float)),
                           out, out_stride, out_column, accumulate});
  }

  // Norm -> Q|K|V projection -> bias / Q-K norm / RoPE (and KV store when `store_kv`).
  BufferId QkvPart(int l, BufferId x, bool store_kv) {
    const LayerWeights& lw = w_.layer(l);
    const std::string p = "l" + std::to_string(l) + ".";
    const int64_t dim = c_.embedding_dim, q_dim = c_.q_dim(), kv_dim = c_.kv_dim();
    const int64_t qkv_width = q_dim + 2 * kv_dim;
    Activation xn = NewActivation(p + "attn_in", dim, capacity_,
                                  {lw.qkv.get(), lw.q.get(), lw.k.get(), lw.v.get()});
    Norm(x, lw.attn_norm, xn);
    const BufferId qkv = b_.NewBuffer(p + "qkv", F(capacity_ * qkv_width));
    if (lw.qkv) {
      MatMul(*lw.qkv, xn, qkv, qkv_width, 0, false);
    } else {
      MatMul(*lw.q, xn, qkv, qkv_width, 0, false);
      MatMul(*lw.k, xn, qkv, qkv_width, q_dim, false);
      MatMul(*lw.v, xn, qkv, qkv_width, q_dim + kv_dim, false);
    }
    auto data_or_null = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
    b_.Add(graph::QkvPostOp{l, qkv, c_.num_heads, c_.num_kv_heads, c_.head_dim,
                            data_or_null(lw.q_bias), data_or_null(lw.k_bias),
                            data_or_null(lw.v_bias), data_or_null(lw.q_norm),
                            data_or_null(lw.k_norm), c_.rms_eps, w_.rope_inv_freq().data(),
                            c_.rope_dims,
                            c_.rope_style == RopeStyle::kNeox ? kernels::RopeStyle::kNeox
                                                              : kernels::RopeStyle::kInterleaved,
                            store_kv});
    return qkv;
  }

  // Attention over the cache -> output projection into the residual -> the MLP block.
  void AttentionAndMlp(int l, BufferId x, BufferId qkv) {
    const LayerWeights& lw = w_.layer(l);
    const std::string p = "l" + std::to_string(l) + ".";
    const int64_t dim = c_.embedding_dim, q_dim = c_.q_dim(), kv_dim = c_.kv_dim();
    const int64_t ffn = c_.ffn_dim;
    const BufferId attn = b_.NewBuffer(p + "attn", F(capacity_ * q_dim));
    b_.Add(graph::AttentionOp{l, qkv, q_dim + 2 * kv_dim, attn, c_.num_heads, c_.num_kv_heads,
                              c_.head_dim, 1.0f / std::sqrt(static_cast<float>(c_.head_dim))});
    Activation attn_out{attn, kNoBuffer, q_dim};
    if (NeedsQ8(lw.output.get())) {
      attn_out.q8 = b_.NewBuffer(p + "attn.q8", capacity_ * kernels::QuantizedRowBytes(q_dim));
      b_.Add(graph::QuantizeOp{attn, attn_out.q8, q_dim, kernels::QuantizedRowBytes(q_dim)});
    }
    MatMul(*lw.output, attn_out, x, dim, 0, true);

    Activation hn = NewActivation(p + "ffn_in", dim, capacity_,
                                  {lw.gate_up.get(), lw.gate.get(), lw.up.get()});
    Norm(x, lw.ffn_norm, hn);
    const BufferId gate_up = b_.NewBuffer(p + "gate_up", F(capacity_ * 2 * ffn));
    if (lw.gate_up) {
      MatMul(*lw.gate_up, hn, gate_up, 2 * ffn, 0, false);
    } else {
      MatMul(*lw.gate, hn, gate_up, 2 * ffn, 0, false);
      MatMul(*lw.up, hn, gate_up, 2 * ffn, ffn, false);
    }
    const bool down_q8 = NeedsQ8(lw.down.get());
    const int64_t h_row_bytes = down_q8 ? kernels::QuantizedRowBytes(ffn) : F(ffn);
    const BufferId h = b_.NewBuffer(p + (down_q8 ? "ffn_hidden.q8" : "ffn_hidden"),
                                    capacity_ * h_row_bytes);
    b_.Add(graph::SwiGluOp{gate_up, h, ffn, down_q8, h_row_bytes});
    Activation hidden{down_q8 ? kNoBuffer : h, down_q8 ? h : kNoBuffer, ffn};
    MatMul(*lw.down, hidden, x, dim, 0, true);
  }

  void Layer(int l, BufferId x) { AttentionAndMlp(l, x, QkvPart(l, x, true)); }

  // The check layer of a recompute graph (DESIGN.md §2): fresh Q|K|V for every row, the
  // deviation of K (and V) from the cache, the top-k selection, then the layer's attention
  // and MLP on the selected rows only. Returns the selected rows' residual buffer.
  BufferId CheckLayer(int l, BufferId x, int64_t k, bool include_v, bool refresh_all) {
    const int64_t q_dim = c_.q_dim(), kv_dim = c_.kv_dim();
    const BufferId qkv = QkvPart(l, x, /*store_kv=*/false);
    const BufferId deviation = b_.NewBuffer("deviation", F(capacity_));
    b_.Add(graph::DeviationOp{l, qkv, deviation, c_.num_heads, c_.num_kv_heads, c_.head_dim,
                              include_v});
    // After the deviation (which reads the cached rows), before the selection.
    if (refresh_all) b_.Add(graph::StoreKvOp{l, qkv, c_.num_heads, c_.num_kv_heads, c_.head_dim});
    b_.Add(graph::SelectRowsOp{deviation, k});
    const BufferId xs = b_.NewBuffer("residual.selected", F(capacity_ * c_.embedding_dim));
    b_.Add(graph::GatherRowsOp{x, xs, F(c_.embedding_dim)});
    const BufferId qkvs = b_.NewBuffer("qkv.selected", F(capacity_ * (q_dim + 2 * kv_dim)));
    b_.Add(graph::GatherRowsOp{qkv, qkvs, F(q_dim + 2 * kv_dim)});
    if (!refresh_all) {
      b_.Add(graph::StoreKvOp{l, qkvs, c_.num_heads, c_.num_kv_heads, c_.head_dim});
    }
    AttentionAndMlp(l, xs, qkvs);
    return xs;
  }

  // The check layer of a query probe: Q|K|V of every row (nothing stored), then the attention
  // they pay to the cached slots.
  void AttentionScores(int l, BufferId x) {
    const BufferId qkv = QkvPart(l, x, /*store_kv=*/false);
    b_.Add(graph::AttentionScoreOp{l, qkv, c_.num_heads, c_.num_kv_heads, c_.head_dim,
                                   1.0f / std::sqrt(static_cast<float>(c_.head_dim))});
  }

  void Head(BufferId x, bool all_logits) {
    const int64_t dim = c_.embedding_dim;
    const int64_t vocab = c_.vocab_size;
    int rows = capacity_;
    BufferId source = x;
    if (!all_logits) {
      const BufferId last = b_.NewBuffer("last_row", dim * static_cast<int64_t>(sizeof(float)));
      b_.Add(graph::SelectRowOp{x, last, dim * static_cast<int64_t>(sizeof(float))});
      source = last;
      rows = 1;
    }
    Activation xo = NewActivation("head_in", dim, rows, {&w_.output()});
    Norm(source, w_.output_norm(), xo);
    const BufferId logits =
        b_.NewBuffer("logits", rows * vocab * static_cast<int64_t>(sizeof(float)));
    MatMul(w_.output(), xo, logits, vocab, 0, false);
    b_.SetLogits(logits, rows, vocab);
  }

 private:
  const PackedWeights& w_;
  const ModelConfig& c_;
  GraphBuilder& b_;
  int capacity_;
  static int64_t F(int64_t n) { return n * static_cast<int64_t>(sizeof(float)); }
};

}  // namespace

Result<graph::CompiledGraph> Compile(const PackedWeights& weights, graph::GraphKind kind,
                                     int capacity, const CompileOptions& options) {
  const ModelConfig& c = weights.config();
  if (capacity < 1) return InvalidArgumentError("graph capacity must be at least 1");
  if (kind == graph::GraphKind::kDecode && capacity != 1) {
    return InvalidArgumentError("a decode graph has capacity 1");
  }
  if (kind == graph::GraphKind::kQueryProbe) {
    if (capacity > graph::kMaxProbeRows) {
      return InvalidArgumentError("a query probe takes at most " +
                                  std::to_string(graph::kMaxProbeRows) + " tokens");
    }
    if (c.num_heads / c.num_kv_heads > graph::kMaxProbeGroup) {
      return UnimplementedError("query probe: more than " + std::to_string(graph::kMaxProbeGroup) +
                                " query heads per kv head");
    }
  }
  if (kind == graph::GraphKind::kRecompute || kind == graph::GraphKind::kQueryProbe) {
    if (options.check_layer < 1 || options.check_layer >= c.num_layers) {
      return InvalidArgumentError("check layer " + std::to_string(options.check_layer) +
                                  " must be in [1, " + std::to_string(c.num_layers - 1) + "]");
    }
    if (!(options.recompute_ratio > 0.0 && options.recompute_ratio <= 1.0)) {
      return InvalidArgumentError("recompute ratio must be in (0, 1]");
    }
  }
  if (c.head_dim > kernels::kMaxAttentionHeadDim || c.head_dim % 8 != 0) {
    return UnimplementedError("head dimension " + std::to_string(c.head_dim) +
                              " is not supported by the attention kernel");
  }
  GraphBuilder b(kind, capacity, c.num_layers);
  LayerEmitter emit(weights, b, capacity);
  const BufferId x = b.NewBuffer(
      "residual", static_cast<int64_t>(capacity) * c.embedding_dim * static_cast<int64_t>(sizeof(float)));
  b.Add(graph::EmbedOp{weights.packed_embedding(), weights.embedding_table(),
                       weights.embedding_dtype(),
                       weights.embedding_row_bytes(), c.vocab_size, c.embedding_dim, x});
  const int per_shard = options.layers_per_shard > 0
                            ? options.layers_per_shard
                            : std::max(1, (c.num_layers + 3) / 4);
  BufferId residual = x;
  if (kind == graph::GraphKind::kQueryProbe) {
    // The layers before the check layer as in a prefill, then the check layer's Q|K|V and the
    // attention its queries pay to the cache.
    for (int l = 0; l < options.check_layer; ++l) emit.Layer(l, x);
    emit.AttentionScores(options.check_layer, x);
    return std::move(b).Build();
  }
  for (int l = 0; l < c.num_layers; ++l) {
    if (l > 0 && l % per_shard == 0) b.BeginShard(l);
    if (kind == graph::GraphKind::kRecompute && l == options.check_layer) {
      const int64_t k = static_cast<int64_t>(std::ceil(options.recompute_ratio * capacity));
      residual = emit.CheckLayer(l, x, std::max<int64_t>(1, k), options.deviation_includes_v,
                                 options.refresh_check_layer);
    } else {
      emit.Layer(l, residual);
    }
  }
  emit.Head(residual, options.all_logits || kind == graph::GraphKind::kDecodeBatch);
  return std::move(b).Build();
}

}  // namespace reprise::model
