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
bool NeedsI8(const OwnedPackedMatrix* m) {
  return m && kernels::UsesStaticInt8Activations(m->view.format);
}
bool NeedsF32(const OwnedPackedMatrix* m) {
  return m && !kernels::UsesQuantizedActivations(m->view.format) &&
         !kernels::UsesStaticInt8Activations(m->view.format);
}

// The same activation rows in the forms the consuming matrices read: floats, int8 rows
// quantized per block, or int8 rows quantized with a static per-tensor scale (with the float
// values of its outlier channels beside them, for the shadow matmul).
struct Activation {
  BufferId f32 = kNoBuffer;
  BufferId q8 = kNoBuffer;
  BufferId i8 = kNoBuffer;
  BufferId outliers = kNoBuffer;
  const ActivationQuant* quant = nullptr;  // with i8
  int64_t dim = 0;
  int point = -1;  // ActivationPointIndex; -1 for the head
};

class LayerEmitter {
 public:
  LayerEmitter(const PackedWeights& w, GraphBuilder& b, int capacity, bool observe)
      : w_(w), c_(w.config()), b_(b), capacity_(capacity), observe_(observe) {}

  // Buffers for `dim`-wide activations read by `consumers`. A float buffer also when the
  // activation is quantized statically (the quantize op reads it) or observed.
  Activation NewActivation(const std::string& name, int64_t dim, int rows, int point,
                           const ActivationQuant* quant,
                           std::initializer_list<const OwnedPackedMatrix*> consumers) {
    Activation a;
    a.dim = dim;
    a.point = point;
    bool q8 = false, i8 = false, f32 = false;
    for (const OwnedPackedMatrix* m : consumers) {
      q8 |= NeedsQ8(m);
      i8 |= NeedsI8(m);
      f32 |= NeedsF32(m);
    }
    if (q8) a.q8 = b_.NewBuffer(name + ".q8", rows * kernels::QuantizedRowBytes(dim));
    if (i8) AddStaticInt8Buffers(name, rows, *quant, a);
    if (f32 || i8 || Observed(a)) a.f32 = b_.NewBuffer(name, F(rows * dim));
    return a;
  }

  // The int8 rows of a statically quantized activation, and its outlier channels' floats.
  void AddStaticInt8Buffers(const std::string& name, int rows, const ActivationQuant& quant,
                            Activation& a) {
    a.quant = &quant;
    a.i8 = b_.NewBuffer(name + ".i8", rows * a.dim);
    if (!quant.outliers.empty()) {
      a.outliers =
          b_.NewBuffer(name + ".outliers", F(rows * static_cast<int64_t>(quant.outliers.size())));
    }
  }

  // After the float rows of `a` are written: the static quantization and the calibration
  // observer where they apply.
  void FromFloat(const Activation& a) {
    if (Observed(a)) b_.Add(graph::ObserveActivationsOp{a.f32, a.dim, a.point});
    if (a.i8 != kNoBuffer) {
      b_.Add(graph::StaticQuantizeOp{a.f32, a.i8, a.dim, a.dim, a.quant->scale,
                                     a.quant->outliers.data(),
                                     static_cast<int64_t>(a.quant->outliers.size()), a.outliers});
    }
  }

  void Norm(BufferId in, const std::vector<float>& weight, const Activation& out) {
    if (out.q8 != kNoBuffer) {
      b_.Add(graph::RmsNormOp{in, out.q8, weight.data(), out.dim, c_.rms_eps, true,
                              kernels::QuantizedRowBytes(out.dim)});
    }
    if (out.f32 != kNoBuffer) {
      b_.Add(graph::RmsNormOp{in, out.f32, weight.data(), out.dim, c_.rms_eps, false, F(out.dim)});
      FromFloat(out);
    }
  }

  void MatMul(const OwnedPackedMatrix& m, const Activation& in, BufferId out, int64_t out_stride,
              int64_t out_column, bool accumulate) {
    if (NeedsI8(&m)) {
      b_.Add(graph::MatMulOp{&m.view, in.i8, in.dim, out, out_stride, out_column, accumulate,
                             in.quant->scale, m.shadow ? &m.shadow->view : nullptr,
                             m.shadow ? in.outliers : kNoBuffer});
      return;
    }
    const bool q8 = NeedsQ8(&m);
    b_.Add(graph::MatMulOp{&m.view, q8 ? in.q8 : in.f32,
                           q8 ? kernels::QuantizedRowBytes(in.dim) : F(in.dim), out, out_stride,
                           out_column, accumulate});
  }

  // Norm -> Q|K|V projection -> bias / Q-K norm / RoPE (and KV store when `store_kv`).
  BufferId QkvPart(int l, BufferId x, bool store_kv) {
    const LayerWeights& lw = w_.layer(l);
    const std::string p = "l" + std::to_string(l) + ".";
    const int64_t dim = c_.embedding_dim, q_dim = c_.q_dim(), kv_dim = c_.kv_dim();
    const int64_t qkv_width = q_dim + 2 * kv_dim;
    Activation xn = NewActivation(
        p + "attn_in", dim, capacity_, ActivationPointIndex(l, ActivationPoint::kAttnIn),
        &lw.quant(ActivationPoint::kAttnIn), {lw.qkv.get(), lw.q.get(), lw.k.get(), lw.v.get()});
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
    b_.Add(graph::QkvPostOp{
        l, qkv, c_.num_heads, c_.num_kv_heads, c_.head_dim, data_or_null(lw.q_bias),
        data_or_null(lw.k_bias), data_or_null(lw.v_bias), data_or_null(lw.q_norm),
        data_or_null(lw.k_norm), c_.rms_eps, w_.rope_inv_freq().data(), c_.rope_dims,
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
    Activation attn_out;
    attn_out.f32 = attn;
    attn_out.dim = q_dim;
    attn_out.point = ActivationPointIndex(l, ActivationPoint::kAttnOut);
    if (NeedsQ8(lw.output.get())) {
      attn_out.q8 = b_.NewBuffer(p + "attn.q8", capacity_ * kernels::QuantizedRowBytes(q_dim));
      b_.Add(graph::QuantizeOp{attn, attn_out.q8, q_dim, kernels::QuantizedRowBytes(q_dim)});
    }
    if (NeedsI8(lw.output.get())) {
      AddStaticInt8Buffers(p + "attn", capacity_, lw.quant(ActivationPoint::kAttnOut), attn_out);
    }
    FromFloat(attn_out);
    MatMul(*lw.output, attn_out, x, dim, 0, true);

    Activation hn = NewActivation(
        p + "ffn_in", dim, capacity_, ActivationPointIndex(l, ActivationPoint::kFfnIn),
        &lw.quant(ActivationPoint::kFfnIn), {lw.gate_up.get(), lw.gate.get(), lw.up.get()});
    Norm(x, lw.ffn_norm, hn);
    const BufferId gate_up = b_.NewBuffer(p + "gate_up", F(capacity_ * 2 * ffn));
    if (lw.gate_up) {
      MatMul(*lw.gate_up, hn, gate_up, 2 * ffn, 0, false);
    } else {
      MatMul(*lw.gate, hn, gate_up, 2 * ffn, 0, false);
      MatMul(*lw.up, hn, gate_up, 2 * ffn, ffn, false);
    }
    const int point = ActivationPointIndex(l, ActivationPoint::kFfnHidden);
    if (NeedsQ8(lw.down.get()) && !observe_) {
      // SwiGLU fused with the per-block quantization.
      Activation hidden;
      hidden.dim = ffn;
      hidden.q8 = b_.NewBuffer(p + "ffn_hidden.q8", capacity_ * kernels::QuantizedRowBytes(ffn));
      b_.Add(graph::SwiGluOp{gate_up, hidden.q8, ffn, true, kernels::QuantizedRowBytes(ffn)});
      MatMul(*lw.down, hidden, x, dim, 0, true);
      return;
    }
    Activation hidden = NewActivation(p + "ffn_hidden", ffn, capacity_, point,
                                      &lw.quant(ActivationPoint::kFfnHidden), {lw.down.get()});
    if (hidden.f32 == kNoBuffer) hidden.f32 = b_.NewBuffer(p + "ffn_hidden", F(capacity_ * ffn));
    b_.Add(graph::SwiGluOp{gate_up, hidden.f32, ffn, false, F(ffn)});
    if (hidden.q8 != kNoBuffer) {
      b_.Add(graph::QuantizeOp{hidden.f32, hidden.q8, ffn, kernels::QuantizedRowBytes(ffn)});
    }
    FromFloat(hidden);
    MatMul(*lw.down, hidden, x, dim, 0, true);
  }

  void Layer(int l, BufferId x) { AttentionAndMlp(l, x, QkvPart(l, x, true)); }

  // The check layer of a recompute graph (docs/design.md §2): fresh Q|K|V for every row, the
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
    Activation xo = NewActivation("head_in", dim, rows, -1, nullptr, {&w_.output()});
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
  bool observe_;
  bool Observed(const Activation& a) const { return observe_ && a.point >= 0; }
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
  LayerEmitter emit(weights, b, capacity, options.observe_activations);
  const BufferId x = b.NewBuffer("residual", static_cast<int64_t>(capacity) * c.embedding_dim *
                                                 static_cast<int64_t>(sizeof(float)));
  b.Add(graph::EmbedOp{weights.packed_embedding(), weights.embedding_table(),
                       weights.embedding_dtype(), weights.embedding_row_bytes(), c.vocab_size,
                       c.embedding_dim, x});
  const int per_shard =
      options.layers_per_shard > 0 ? options.layers_per_shard : std::max(1, (c.num_layers + 3) / 4);
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
