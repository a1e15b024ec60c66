#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/quantize.h"

namespace reprise::graph {
namespace {

// (query, query head) rows per attention work item: the SIMD kernels (attention_tiles.h)
// share each K/V tile among the rows of a block of up to 64; at least 16 queries per item.
constexpr int64_t kAttentionRowsPerItem = 64;
constexpr int64_t kAttentionMinQueriesPerItem = 16;
// A block split further to even out the threads' work keeps at least this many queries.
constexpr int64_t kAttentionMinSplitQueries = 8;

// How a prefill's `rows` queries are cut into attention blocks (each a work item per kv head):
// as few blocks as hold at most `max_queries` each, all of the same size give or take one (a
// last block of a few queries would convert the whole K/V tile stream for almost no rows), and
// — when blocks of at least kAttentionMinSplitQueries allow it — a number of items that the
// threads share evenly (at the end of a long context every block costs about the same, so 21
// items on 2 threads leave one idle for a twenty-first of the time).
int64_t AttentionBlocks(int64_t rows, int64_t max_queries, int64_t kv_heads, int num_threads) {
  const int64_t fewest = std::max<int64_t>(1, (rows + max_queries - 1) / max_queries);
  for (int64_t blocks = fewest; blocks < fewest + num_threads; ++blocks) {
    if ((blocks * kv_heads) % num_threads == 0) {
      return rows / blocks >= kAttentionMinSplitQueries || blocks == fewest ? blocks : fewest;
    }
  }
  return fewest;
}

template <typename T>
T* As(uint8_t* p) {
  return reinterpret_cast<T*>(p);
}

// Stores one row's K and V (f32, after RoPE) as f16 into `slot` of a layer's cache. The slot's
// position is recorded with layer 0 (every graph stores a row's layer 0 first): later layers
// would only write the same value again, and must not, since out-of-order scheduling runs
// another call's attention, which reads the positions, beside this call's later shards.
void StoreRow(const kernels::KernelSet& k, const KvBinding& kv, const KvLayerView& layer,
              const float* key, const float* value, int64_t num_kv_heads, int64_t head_dim,
              int64_t slot, int32_t position, bool first_layer) {
  for (int64_t h = 0; h < num_kv_heads; ++h) {
    const int64_t offset = (h * kv.capacity + slot) * head_dim;
    k.f32_to_f16(key + h * head_dim, head_dim, layer.k + offset);
    k.f32_to_f16(value + h * head_dim, head_dim, layer.v + offset);
  }
  if (first_layer) kv.slot_positions[slot] = position;
}

}  // namespace

void Executor::Run(ExecutionContext& context, int shard_begin, int shard_end) {
  const CompiledGraph& graph = context.graph();
  if (shard_end < 0) shard_end = static_cast<int>(graph.shards().size());
  REPRISE_CHECK(shard_begin >= 0 && shard_begin <= shard_end &&
                shard_end <= static_cast<int>(graph.shards().size()));
  REPRISE_CHECK(context.num_valid() > 0) << "inputs not set";
  REPRISE_CHECK(context.per_row_kv() ||
                static_cast<int>(context.kv().layers.size()) == graph.num_layers())
      << "KV cache not bound";
  const int first_op = graph.shards()[static_cast<size_t>(shard_begin)].first_op;
  const int end_op = shard_end == shard_begin
                         ? first_op
                         : graph.shards()[static_cast<size_t>(shard_end - 1)].end_op;
  for (int i = first_op; i < end_op; ++i) {
    const int phase = i >= graph.first_selected_op() ? 1 : 0;
    const RowSet rows = context.rows(phase);
    const Op& op = graph.ops()[static_cast<size_t>(i)];
    const int num_rows = i >= graph.first_single_row_op() ? 1 : rows.num_rows;
    if (op_times_ == nullptr) {
      RunOp(op, context, rows, num_rows);
    } else {
      const auto start = std::chrono::steady_clock::now();
      RunOp(op, context, rows, num_rows);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (const auto* matmul = std::get_if<MatMulOp>(&op)) {
        const double macs =
            static_cast<double>(num_rows) * matmul->matrix->rows * matmul->matrix->cols;
        op_times_->matmul_ms += ms;
        op_times_->matmul_macs += macs;
        if (kernels::UsesQuantizedActivations(matmul->matrix->format) ||
            kernels::UsesStaticInt8Activations(matmul->matrix->format)) {
          op_times_->matmul_int8_ms += ms;
          op_times_->matmul_int8_macs += macs;
        }
      } else if (std::holds_alternative<AttentionOp>(op)) {
        op_times_->attention_ms += ms;
      } else {
        op_times_->other_ms += ms;
      }
    }
    if (context.aborted()) return;  // the quality guard stopped a recompute run
  }
}

void Executor::RunAttentionScores(const AttentionScoreOp& op, ExecutionContext& ctx,
                                  const RowSet& set) {
  const kernels::KernelSet& k = *kernels_;
  const int valid = set.num_valid;
  const int64_t hd = op.head_dim;
  const int64_t group = op.num_heads / op.num_kv_heads;
  const int64_t stride = (op.num_heads + 2 * op.num_kv_heads) * hd;
  const float* qkv = As<float>(ctx.buffer(op.qkv));
  const KvBinding& kv = ctx.kv();
  const KvLayerView& layer = kv.layers[static_cast<size_t>(op.layer)];
  REPRISE_CHECK(valid <= kMaxProbeRows && group <= kMaxProbeGroup);
  // The slots scored: every visible one before the first probed row's.
  int64_t first = ctx.num_visible_slots();
  for (int m = 0; m < valid; ++m) first = std::min<int64_t>(first, set.slots[m]);
  float* partials = ctx.attention_score_partials();
  // Work items: kv heads. Each scores its query heads' rows in two passes over the slots in
  // tiles (the softmax's max and sum, then the probabilities), the tile's keys converted to
  // float once for every row and head and laid out so the dot products vectorise.
  constexpr int64_t kTile = 32;
  pool_->ParallelFor(op.num_kv_heads, 1, [&](int64_t h0, int64_t h1) {
    alignas(64) float keys[kernels::kMaxAttentionHeadDim * kTile];  // [head_dim][kTile]
    float row[kernels::kMaxAttentionHeadDim];
    float logits[kTile];
    float max[kMaxProbeRows * kMaxProbeGroup];
    float sum[kMaxProbeRows * kMaxProbeGroup];
    for (int64_t kv_head = h0; kv_head < h1; ++kv_head) {
      float* acc = partials + kv_head * kv.capacity;
      std::fill(acc, acc + first, 0.0f);
      const uint16_t* k_head = layer.k + kv_head * kv.capacity * hd;
      auto query = [&](int m, int64_t g) { return qkv + m * stride + (kv_head * group + g) * hd; };
      // The rows' own fresh keys (causal among themselves) count in the softmax only.
      for (int m = 0; m < valid; ++m) {
        for (int64_t g = 0; g < group; ++g) {
          const float* q = query(m, g);
          float& mx = max[m * group + g];
          float& sm = sum[m * group + g];
          mx = -INFINITY;
          sm = 0.0f;
          for (int j = 0; j < valid; ++j) {
            if (set.positions[j] > set.positions[m]) continue;
            const float* key = qkv + j * stride + (op.num_heads + kv_head) * hd;
            float dot = 0.0f;
            for (int64_t d = 0; d < hd; ++d) dot += q[d] * key[d];
            const float score = dot * op.scale;
            if (score > mx) {
              sm *= std::exp(mx - score);
              mx = score;
            }
            sm += std::exp(score - mx);
          }
        }
      }
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t t0 = 0; t0 < first; t0 += kTile) {
          const int64_t count = std::min(kTile, first - t0);
          for (int64_t s = 0; s < kTile; ++s) {
            if (s < count) {
              k.f16_to_f32(k_head + (t0 + s) * hd, hd, row);
            } else {
              std::fill(row, row + hd, 0.0f);
            }
            for (int64_t d = 0; d < hd; ++d) keys[d * kTile + s] = row[d];
          }
          for (int m = 0; m < valid; ++m) {
            const int32_t position = set.positions[m];
            for (int64_t g = 0; g < group; ++g) {
              const float* q = query(m, g);
              std::fill(logits, logits + kTile, 0.0f);
              for (int64_t d = 0; d < hd; ++d) {
                const float qd = q[d];
                const float* column = keys + d * kTile;
                for (int64_t s = 0; s < kTile; ++s) logits[s] += qd * column[s];
              }
              float& mx = max[m * group + g];
              float& sm = sum[m * group + g];
              for (int64_t s = 0; s < count; ++s) {
                const int32_t slot_position = kv.slot_positions[t0 + s];
                if (slot_position < 0 || slot_position > position) continue;
                const float score = logits[s] * op.scale;
                if (pass == 0) {
                  if (score > mx) {
                    sm *= std::exp(mx - score);
                    mx = score;
                  }
                  sm += std::exp(score - mx);
                } else {
                  acc[t0 + s] += std::exp(score - mx) / sm;
                }
              }
            }
          }
        }
      }
    }
  });
  float* scores = ctx.attention_scores_out();
  const float norm = 1.0f / static_cast<float>(std::max<int64_t>(1, valid * op.num_heads));
  for (int64_t s = 0; s < first; ++s) {
    float total = 0.0f;
    for (int64_t h = 0; h < op.num_kv_heads; ++h) total += partials[h * kv.capacity + s];
    scores[s] = std::isfinite(total) ? total * norm : 0.0f;
  }
  ctx.set_num_scored_slots(first);
}

void Executor::RunOp(const Op& any_op, ExecutionContext& ctx, const RowSet& set, int rows) {
  const kernels::KernelSet& k = *kernels_;
  ThreadPool& pool = *pool_;
  if (const auto* op = std::get_if<MatMulOp>(&any_op)) {
    const kernels::PackedMatrix& w = *op->matrix;
    kernels::MatMulInput input;
    if (kernels::UsesQuantizedActivations(w.format) ||
        kernels::UsesStaticInt8Activations(w.format)) {
      input.q8 = ctx.buffer(op->in);
      input.q8_stride = op->in_row_bytes;
      input.static_scale = op->activation_scale;  // read by kI8x8 only
    } else {
      input.f32 = As<float>(ctx.buffer(op->in));
      input.f32_stride = op->in_row_bytes / static_cast<int64_t>(sizeof(float));
    }
    const kernels::MatMulOutput output{As<float>(ctx.buffer(op->out)) + op->out_column,
                                       op->out_stride, op->accumulate};
    kernels::MatMulInput shadow_input;
    if (op->shadow != nullptr) {
      shadow_input.f32 = As<float>(ctx.buffer(op->shadow_in));
      shadow_input.f32_stride = op->shadow->cols;
    }
    const kernels::MatMulOutput shadow_output{output.data, output.stride, true};
    const int64_t n = w.rows;
    pool.ParallelFor(w.num_groups(), 1, [&](int64_t g0, int64_t g1) {
      const int64_t n0 = g0 * kernels::kPackRows, n1 = std::min(n, g1 * kernels::kPackRows);
      k.matmul(w, input, output, 0, rows, n0, n1);
      if (op->shadow != nullptr)
        k.matmul(*op->shadow, shadow_input, shadow_output, 0, rows, n0, n1);
    });
    return;
  }
  if (const auto* op = std::get_if<StaticQuantizeOp>(&any_op)) {
    const float* in = As<float>(ctx.buffer(op->in));
    uint8_t* out = ctx.buffer(op->out);
    float* outliers = op->num_outliers > 0 ? As<float>(ctx.buffer(op->outlier_out)) : nullptr;
    const float inverse = 1.0f / op->scale;
    pool.ParallelFor(rows, 8, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const float* x = in + m * op->dim;
        k.static_quantize_row(x, op->dim, inverse,
                              reinterpret_cast<int8_t*>(out + m * op->out_row_bytes));
        for (int64_t j = 0; j < op->num_outliers; ++j) {
          outliers[m * op->num_outliers + j] = x[op->outliers[j]];
        }
      }
    });
    return;
  }
  if (const auto* op = std::get_if<ObserveActivationsOp>(&any_op)) {
    if (activation_stats_ == nullptr) return;
    ActivationStats& stats = *activation_stats_;
    if (stats.channel_absmax.size() <= static_cast<size_t>(op->point)) {
      stats.channel_absmax.resize(static_cast<size_t>(op->point) + 1);
    }
    std::vector<float>& absmax = stats.channel_absmax[static_cast<size_t>(op->point)];
    absmax.resize(static_cast<size_t>(op->dim), 0.0f);
    const float* in = As<float>(ctx.buffer(op->in));
    const int valid = std::min(rows, set.num_valid);
    for (int m = 0; m < valid; ++m) {
      for (int64_t c = 0; c < op->dim; ++c) {
        absmax[static_cast<size_t>(c)] =
            std::max(absmax[static_cast<size_t>(c)], std::fabs(in[m * op->dim + c]));
      }
    }
    return;
  }
  if (const auto* op = std::get_if<RmsNormOp>(&any_op)) {
    const float* in = As<float>(ctx.buffer(op->in));
    uint8_t* out = ctx.buffer(op->out);
    pool.ParallelFor(rows, 8, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        if (op->quantize_out) {
          k.rms_norm_quantize(in + m * op->dim, op->weight, op->dim, op->eps,
                              out + m * op->out_row_bytes);
        } else {
          k.rms_norm(in + m * op->dim, op->weight, op->dim, op->eps,
                     As<float>(out + m * op->out_row_bytes));
        }
      }
    });
    return;
  }
  if (const auto* op = std::get_if<QuantizeOp>(&any_op)) {
    const float* in = As<float>(ctx.buffer(op->in));
    uint8_t* out = ctx.buffer(op->out);
    pool.ParallelFor(rows, 8, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        k.quantize_row(in + m * op->dim, op->dim, out + m * op->out_row_bytes);
      }
    });
    return;
  }
  if (const auto* op = std::get_if<QkvPostOp>(&any_op)) {
    const int64_t q_dim = op->num_heads * op->head_dim;
    const int64_t kv_dim = op->num_kv_heads * op->head_dim;
    const int64_t stride = q_dim + 2 * kv_dim;
    float* qkv = As<float>(ctx.buffer(op->qkv));
    pool.ParallelFor(rows, 4, [&](int64_t m0, int64_t m1) {
      float cos[kernels::kMaxAttentionHeadDim / 2];
      float sin[kernels::kMaxAttentionHeadDim / 2];
      for (int64_t m = m0; m < m1; ++m) {
        float* q = qkv + m * stride;
        float* key = q + q_dim;
        float* value = key + kv_dim;
        if (op->q_bias) k.add(q, op->q_bias, q_dim, q);
        if (op->k_bias) k.add(key, op->k_bias, kv_dim, key);
        if (op->v_bias) k.add(value, op->v_bias, kv_dim, value);
        if (op->q_norm) {
          for (int64_t h = 0; h < op->num_heads; ++h) {
            k.rms_norm(q + h * op->head_dim, op->q_norm, op->head_dim, op->eps,
                       q + h * op->head_dim);
          }
        }
        if (op->k_norm) {
          for (int64_t h = 0; h < op->num_kv_heads; ++h) {
            k.rms_norm(key + h * op->head_dim, op->k_norm, op->head_dim, op->eps,
                       key + h * op->head_dim);
          }
        }
        kernels::RopeCosSin(set.positions[m], op->rope_inv_freq, op->rope_dims / 2, cos, sin);
        k.rope(q, op->num_heads, op->head_dim, op->rope_dims, cos, sin, op->rope_style);
        k.rope(key, op->num_kv_heads, op->head_dim, op->rope_dims, cos, sin, op->rope_style);
        if (!op->store_kv || m >= set.num_valid) continue;  // padding writes nothing
        const KvBinding& kv = ctx.kv_of_row(set.input_rows[m]);
        StoreRow(k, kv, kv.layers[static_cast<size_t>(op->layer)], key, value, op->num_kv_heads,
                 op->head_dim, set.slots[m], set.positions[m], op->layer == 0);
      }
    });
    return;
  }
  if (const auto* op = std::get_if<StoreKvOp>(&any_op)) {
    const int64_t q_dim = op->num_heads * op->head_dim;
    const int64_t kv_dim = op->num_kv_heads * op->head_dim;
    const float* qkv = As<float>(ctx.buffer(op->qkv));
    for (int64_t m = 0; m < std::min(rows, set.num_valid); ++m) {
      const float* key = qkv + m * (q_dim + 2 * kv_dim) + q_dim;
      const KvBinding& kv = ctx.kv_of_row(set.input_rows[m]);
      StoreRow(k, kv, kv.layers[static_cast<size_t>(op->layer)], key, key + kv_dim,
               op->num_kv_heads, op->head_dim, set.slots[m], set.positions[m], op->layer == 0);
    }
    return;
  }
  if (const auto* op = std::get_if<AttentionOp>(&any_op)) {
    const KvBinding& kv = ctx.kv_of_row(set.input_rows[0]);
    const KvLayerView& layer = kv.layers[static_cast<size_t>(op->layer)];
    kernels::AttentionArgs args;
    args.q = As<float>(ctx.buffer(op->qkv));
    args.q_stride = op->qkv_stride;
    args.out = As<float>(ctx.buffer(op->out));
    args.out_stride = op->num_heads * op->head_dim;
    args.query_positions = set.query_positions;
    args.k_cache = layer.k;
    args.v_cache = layer.v;
    args.capacity = kv.capacity;
    args.slot_positions = kv.slot_positions;
    args.num_slots = ctx.num_visible_slots();
    args.num_heads = op->num_heads;
    args.num_kv_heads = op->num_kv_heads;
    args.head_dim = op->head_dim;
    args.scale = op->scale;
    const int64_t group = op->num_heads / op->num_kv_heads;
    if (ctx.per_row_kv()) {
      // A decode batch: each row is one sequence's query over its own cache; work items are
      // (row, kv head).
      const int64_t items = static_cast<int64_t>(std::min(rows, set.num_valid)) * op->num_kv_heads;
      pool.ParallelFor(items, 1, [&](int64_t i0, int64_t i1) {
        kernels::AttentionArgs row_args = args;
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t m = i / op->num_kv_heads;
          const int64_t kv_head = i % op->num_kv_heads;
          const KvBinding& row_kv = ctx.kv_of_row(set.input_rows[m]);
          const KvLayerView& row_layer = row_kv.layers[static_cast<size_t>(op->layer)];
          row_args.k_cache = row_layer.k;
          row_args.v_cache = row_layer.v;
          row_args.capacity = row_kv.capacity;
          row_args.slot_positions = row_kv.slot_positions;
          row_args.num_slots = ctx.visible_slots_of_row(set.input_rows[m]);
          k.attention(row_args, m, m + 1, kv_head * group, (kv_head + 1) * group);
        }
      });
      return;
    }
    const int64_t blocks =
        AttentionBlocks(rows, std::max(kAttentionMinQueriesPerItem, kAttentionRowsPerItem / group),
                        op->num_kv_heads, pool.num_threads());
    const int64_t queries_per_item = (rows + blocks - 1) / blocks;
    // Work items (query block, kv head); a kv head's query heads stay together so that its
    // K/V rows are read once per block. A causal block's cost grows with its position, and
    // the pool gives each thread a contiguous range of items: blocks go in the order first,
    // last, second, second to last, ... so that every range mixes cheap and dear ones.
    const int64_t items = blocks * op->num_kv_heads;
    pool.ParallelFor(items, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t turn = i / op->num_kv_heads;
        const int64_t block = turn % 2 == 0 ? turn / 2 : blocks - 1 - turn / 2;
        const int64_t kv_head = i % op->num_kv_heads;
        const int64_t q0 = block * queries_per_item;
        const int64_t q1 = std::min<int64_t>(rows, q0 + queries_per_item);
        if (q0 >= q1) continue;  // the rounding can leave the last block empty
        k.attention(args, q0, q1, kv_head * group, (kv_head + 1) * group);
      }
    });
    return;
  }
  if (const auto* op = std::get_if<SwiGluOp>(&any_op)) {
    float* gu = As<float>(ctx.buffer(op->gate_up));
    uint8_t* out = ctx.buffer(op->out);
    pool.ParallelFor(rows, 4, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        float* gate = gu + m * 2 * op->ffn;
        const float* up = gate + op->ffn;
        if (op->quantize_out) {
          k.silu_mul(gate, up, op->ffn, gate);
          k.quantize_row(gate, op->ffn, out + m * op->out_row_bytes);
        } else {
          k.silu_mul(gate, up, op->ffn, As<float>(out + m * op->out_row_bytes));
        }
      }
    });
    return;
  }
  if (const auto* op = std::get_if<EmbedOp>(&any_op)) {
    float* out = As<float>(ctx.buffer(op->out));
    const int32_t* tokens = ctx.tokens();
    pool.ParallelFor(rows, 8, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        if (op->packed) {
          kernels::UnpackRow(*op->packed, tokens[m], out + m * op->dim);
        } else {
          kernels::DequantizeRow(op->dtype, op->table + tokens[m] * op->row_bytes,
                                 out + m * op->dim, op->dim);
        }
      }
    });
    return;
  }
  if (const auto* op = std::get_if<SelectRowOp>(&any_op)) {
    const int64_t last = set.num_valid - 1;
    std::memcpy(ctx.buffer(op->out), ctx.buffer(op->in) + last * op->row_bytes,
                static_cast<size_t>(op->row_bytes));
    return;
  }
  if (const auto* op = std::get_if<DeviationOp>(&any_op)) {
    const int64_t q_dim = op->num_heads * op->head_dim;
    const int64_t kv_dim = op->num_kv_heads * op->head_dim;
    const float* qkv = As<float>(ctx.buffer(op->qkv));
    float* out = As<float>(ctx.buffer(op->out));
    const uint8_t* forced = ctx.forced();
    float* relative = ctx.relative_deviation();
    pool.ParallelFor(rows, 4, [&](int64_t m0, int64_t m1) {
      float cached[kernels::kMaxAttentionHeadDim];
      for (int64_t m = m0; m < m1; ++m) {
        relative[m] = 0.0f;
        if (m >= set.num_valid) {
          out[m] = -std::numeric_limits<float>::infinity();
          continue;
        }
        if (forced[m] == kRowForced) {
          out[m] = std::numeric_limits<float>::infinity();
          continue;
        }
        const float* key = qkv + m * (q_dim + 2 * kv_dim) + q_dim;
        const int64_t slot = set.slots[m];
        const KvBinding& kv = ctx.kv_of_row(set.input_rows[m]);
        const KvLayerView& layer = kv.layers[static_cast<size_t>(op->layer)];
        double sum = 0.0;
        double energy = 0.0;
        for (int part = 0; part < (op->include_v ? 2 : 1); ++part) {
          const float* fresh = key + part * kv_dim;
          const uint16_t* base = part == 0 ? layer.k : layer.v;
          for (int64_t h = 0; h < op->num_kv_heads; ++h) {
            k.f16_to_f32(base + (h * kv.capacity + slot) * op->head_dim, op->head_dim, cached);
            for (int64_t d = 0; d < op->head_dim; ++d) {
              const double f = fresh[h * op->head_dim + d];
              const double diff = f - cached[d];
              sum += diff * diff;
              energy += f * f;
            }
          }
        }
        const float d = static_cast<float>(sum / static_cast<double>(kv_dim));
        // A cached row that is not finite can only be fixed by recomputing it.
        out[m] = std::isfinite(d) ? d : std::numeric_limits<float>::infinity();
        relative[m] = std::isfinite(d) ? static_cast<float>(sum / std::max(energy, 1e-30))
                                       : std::numeric_limits<float>::infinity();
      }
    });
    return;
  }
  if (const auto* op = std::get_if<SelectRowsOp>(&any_op)) {
    const float* deviation = As<float>(ctx.buffer(op->deviation));
    const int valid = set.num_valid;
    int32_t* order = ctx.selection_scratch();
    int forced = 0;
    for (int m = 0; m < valid; ++m) {
      order[m] = m;
      forced += std::isinf(deviation[m]) && deviation[m] > 0;
    }
    int k_eff = std::min<int>(valid, std::max<int64_t>(op->k, forced));
    // What the selectable rows are ranked by: their deviation, or with query-aware selection
    // the attention the prompt's last tokens pay to them (times the deviation).
    const float* rank = deviation;
    if (ctx.selection_key() != TokenSelection::kDeviation) {
      float* values = ctx.selection_values();
      const float* attention = ctx.row_attention();
      const bool product = ctx.selection_key() == TokenSelection::kAttentionTimesDeviation;
      for (int m = 0; m < valid; ++m) {
        const float d = deviation[m];
        values[m] = std::isinf(d) ? d : product ? d * attention[m] : attention[m];
      }
      rank = values;
    }
    auto larger = [&](int32_t a, int32_t b) {
      return rank[a] > rank[b] || (rank[a] == rank[b] && a < b);
    };
    std::nth_element(order, order + k_eff, order + valid, larger);
    const float* relative = ctx.relative_deviation();
    const double min_relative = ctx.min_relative_deviation();
    const double stable_min_relative = ctx.stable_min_relative_deviation();
    if ((min_relative > 0 || stable_min_relative > 0) && k_eff > 0) {
      // Adaptive recompute: keep forced rows and rows whose deviation is material (for rows
      // of stable context, by their own threshold too); the largest-deviation row stays in
      // any case (order[0..k_eff) holds the top k, unordered).
      const uint8_t* modes = ctx.forced();
      const int32_t top = *std::min_element(order, order + k_eff, larger);
      int kept = 0;
      for (int j = 0; j < k_eff; ++j) {
        const int32_t m = order[j];
        const bool is_forced = std::isinf(deviation[m]) && deviation[m] > 0;
        const double threshold = modes[m] == kRowStableContext
                                     ? std::max(min_relative, stable_min_relative)
                                     : min_relative;
        if (is_forced || m == top || relative[m] >= threshold) order[kept++] = m;
      }
      k_eff = kept;
    }
    std::sort(order, order + k_eff);
    // The guard's figure: the mean relative deviation of the reused rows left unselected.
    double residual = 0.0;
    int unselected = 0;
    for (int m = 0, j = 0; m < valid; ++m) {
      if (j < k_eff && order[j] == m) {
        ++j;
        continue;
      }
      residual += relative[m];
      ++unselected;
    }
    const double mean_residual = unselected > 0 ? residual / unselected : 0.0;
    ctx.set_residual_deviation(mean_residual);
    if (ctx.abort_above() > 0 && mean_residual > ctx.abort_above()) {
      ctx.set_aborted();
      return;
    }
    ctx.SelectRows(std::span<const int32_t>(order, static_cast<size_t>(k_eff)),
                   static_cast<int>(op->k));
    return;
  }
  if (const auto* op = std::get_if<AttentionScoreOp>(&any_op)) {
    RunAttentionScores(*op, ctx, set);
    return;
  }
  if (const auto* op = std::get_if<GatherRowsOp>(&any_op)) {
    // Runs in the selected phase: `set` is the selection; `rows` its size.
    const uint8_t* in = ctx.buffer(op->in);
    uint8_t* out = ctx.buffer(op->out);
    for (int64_t j = 0; j < rows; ++j) {
      std::memcpy(out + j * op->row_bytes, in + set.input_rows[j] * op->row_bytes,
                  static_cast<size_t>(op->row_bytes));
    }
    return;
  }
  REPRISE_CHECK(false) << "unhandled op " << OpName(any_op);
}

}  // namespace reprise::graph
