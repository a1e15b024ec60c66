// Query-aware selection's two graph pieces, run by the Executor on hand-built graphs: the
// attention scores a probe computes (AttentionScoreOp) against a double-precision softmax, and
// the selection ranking rows by attention (SelectRowsOp with ExecutionContext::SetRowAttention).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "graph/execution_context.h"
#include "graph/executor.h"
#include "kernels/kernel_set.h"

namespace reprise::graph {
namespace {

constexpr int64_t kHeads = 4, kKvHeads = 2, kHeadDim = 16;
constexpr int64_t kQDim = kHeads * kHeadDim, kKvDim = kKvHeads * kHeadDim;
constexpr int64_t kStride = kQDim + 2 * kKvDim;
constexpr int64_t kSlots = 80;  // more than two tiles of the op, and a partial one

struct Cache {
  std::vector<uint16_t> k, v;  // [kv head][slot][dim]
  std::vector<int32_t> positions;
  std::vector<KvLayerView> layers;
  KvBinding binding;
};

Cache MakeCache(Random& rng) {
  Cache c;
  c.k.resize(kKvHeads * kSlots * kHeadDim);
  c.v.resize(c.k.size());
  for (auto& x : c.k) x = F32ToF16(static_cast<float>(rng.NextDouble() * 2 - 1));
  for (auto& x : c.v) x = F32ToF16(0.0f);
  c.positions.resize(kSlots);
  for (int64_t s = 0; s < kSlots; ++s) c.positions[s] = static_cast<int32_t>(s);
  c.layers = {KvLayerView{c.k.data(), c.v.data()}};
  c.binding = KvBinding{c.layers, kSlots, c.positions.data(), kKvHeads, kHeadDim};
  return c;
}

TEST(QuerySelectionTest, AttentionScoresAreTheMeanSoftmaxOverCachedSlotsAndOwnKeys) {
  Random rng(5);
  Cache cache = MakeCache(rng);
  cache.positions[7] = -1;   // an empty slot: never scored
  cache.positions[20] = 75;  // a slot holding a token after some probe rows: masked for them
  constexpr int kRows = 5;
  constexpr int kFirst = 70;  // the probe's rows sit in slots 70..74, positions 70..74
  GraphBuilder b(GraphKind::kQueryProbe, 8, 1);
  const BufferId qkv = b.NewBuffer("qkv", 8 * kStride * 4);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  b.Add(AttentionScoreOp{0, qkv, kHeads, kKvHeads, kHeadDim, scale});
  const CompiledGraph graph = std::move(b).Build();
  auto context = std::move(ExecutionContext::Create(graph)).value();
  context->BindKv(cache.binding);
  std::vector<int32_t> tokens(kRows, 1), positions(kRows);
  for (int m = 0; m < kRows; ++m) positions[m] = kFirst + m;
  ASSERT_TRUE(context->SetInputs(tokens, positions, positions, kSlots).ok());
  float* rows = reinterpret_cast<float*>(context->buffer(qkv));
  for (int64_t i = 0; i < kRows * kStride; ++i)
    rows[i] = static_cast<float>(rng.NextDouble() * 4 - 2);

  auto pool = std::move(ThreadPool::Create({.num_threads = 2})).value();
  for (const kernels::KernelSet* kernels : {&kernels::ScalarKernels(), &kernels::BestKernels()}) {
    Executor executor(*pool, *kernels);
    executor.Run(*context);
    const std::span<const float> scores = context->attention_scores();
    ASSERT_EQ(scores.size(), static_cast<size_t>(kFirst)) << kernels->name;

    std::vector<double> expected(kFirst, 0.0);
    for (int m = 0; m < kRows; ++m) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const int64_t kv = h / (kHeads / kKvHeads);
        const float* q = rows + m * kStride + h * kHeadDim;
        std::vector<double> logits;
        std::vector<int> slot_of;  // -1: one of the rows' own keys
        for (int64_t s = 0; s < kFirst; ++s) {
          if (cache.positions[s] < 0 || cache.positions[s] > positions[m]) continue;
          double dot = 0;
          for (int64_t d = 0; d < kHeadDim; ++d) {
            dot += q[d] * F16ToF32(cache.k[(kv * kSlots + s) * kHeadDim + d]);
          }
          logits.push_back(dot * scale);
          slot_of.push_back(static_cast<int>(s));
        }
        for (int j = 0; j <= m; ++j) {
          const float* key = rows + j * kStride + kQDim + kv * kHeadDim;
          double dot = 0;
          for (int64_t d = 0; d < kHeadDim; ++d) dot += q[d] * key[d];
          logits.push_back(dot * scale);
          slot_of.push_back(-1);
        }
        double max = -INFINITY, sum = 0;
        for (double l : logits) max = std::max(max, l);
        for (double l : logits) sum += std::exp(l - max);
        for (size_t i = 0; i < logits.size(); ++i) {
          if (slot_of[i] >= 0) expected[slot_of[i]] += std::exp(logits[i] - max) / sum;
        }
      }
    }
    double total = 0;
    for (int64_t s = 0; s < kFirst; ++s) {
      expected[s] /= kRows * kHeads;
      EXPECT_NEAR(scores[s], expected[s], 1e-5 + 1e-4 * expected[s])
          << kernels->name << " slot " << s;
      total += scores[s];
    }
    EXPECT_EQ(scores[7], 0.0f);
    // Slot 20 (position 75) is after every probe row: none of them sees it.
    EXPECT_EQ(scores[20], 0.0f);
    EXPECT_GT(total, 0.5);  // most of the attention goes to the 68 cached slots
    EXPECT_LT(total, 1.0);  // the rest to the rows' own keys
  }
}

TEST(QuerySelectionTest, SelectionRanksByAttentionOrByItsProductWithTheDeviation) {
  constexpr int kRows = 8;
  GraphBuilder b(GraphKind::kRecompute, kRows, 1);
  const BufferId deviation = b.NewBuffer("deviation", kRows * 4);
  b.Add(SelectRowsOp{deviation, 3});
  const CompiledGraph graph = std::move(b).Build();
  auto context = std::move(ExecutionContext::Create(graph)).value();
  Random rng(1);
  Cache cache = MakeCache(rng);
  context->BindKv(cache.binding);
  auto pool = std::move(ThreadPool::Create({.num_threads = 1})).value();
  Executor executor(*pool, kernels::ScalarKernels());
  // Row 7 is forced (the deviation op marks it +inf).
  const float dev[kRows] = {0.9f, 0.1f, 0.8f, 0.2f, 0.7f, 0.3f, 0.05f, INFINITY};
  const float attention[kRows] = {0.0f, 0.5f, 0.01f, 0.3f, 0.02f, 0.01f, 0.4f, 0.0f};
  auto run = [&](TokenSelection key) {
    std::vector<int32_t> tokens(kRows, 1), positions(kRows);
    for (int m = 0; m < kRows; ++m) positions[m] = m;
    EXPECT_TRUE(context->SetInputs(tokens, positions, positions, kRows).ok());
    std::copy(dev, dev + kRows, reinterpret_cast<float*>(context->buffer(deviation)));
    if (key != TokenSelection::kDeviation) context->SetRowAttention(attention, key);
    executor.Run(*context);
    const auto selected = context->selected_rows();
    return std::vector<int32_t>(selected.begin(), selected.end());
  };
  EXPECT_EQ(run(TokenSelection::kDeviation), (std::vector<int32_t>{0, 2, 7}));
  EXPECT_EQ(run(TokenSelection::kAttention), (std::vector<int32_t>{1, 6, 7}));
  // Products: 0, .05, .008, .06, .014, .003, .02: rows 3 and 1.
  EXPECT_EQ(run(TokenSelection::kAttentionTimesDeviation), (std::vector<int32_t>{1, 3, 7}));
  // SetInputs resets the ranking to the deviation.
  EXPECT_EQ(run(TokenSelection::kDeviation), (std::vector<int32_t>{0, 2, 7}));
}

}  // namespace
}  // namespace reprise::graph
