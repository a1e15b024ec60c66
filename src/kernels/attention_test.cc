// Attention kernels against a naive softmax attention computed in double from the same f16
// cache: masks by position (causal, empty slots, non-contiguous and shuffled positions),
// padding queries, GQA, long contexts, and partial query / head ranges.
//
// Tolerance: outputs are convex combinations of V rows (|v| <= ~4 here). The float path
// rounds each score to ~hd * 2^-24 relative, which the exp turns into an absolute error of
// about |score| * that in the weights; with |score| <= ~30 below, 2e-4 absolute covers it
// with a wide margin (observed errors are ~1e-6).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "kernels/kernel_set.h"
#include "kernels/kernel_test_util.h"

namespace reprise::kernels {
namespace {

using testing::RandomFloats;
using testing::SimdSets;

constexpr float kSentinel = -777.0f;

struct Problem {
  int64_t num_queries, num_heads, num_kv_heads, head_dim, capacity, num_slots;
  std::vector<float> q;
  std::vector<uint16_t> k, v;
  std::vector<int32_t> slot_positions;
  std::vector<int32_t> query_positions;
  float scale;

  AttentionArgs Args(float* out) const {
    AttentionArgs args;
    args.q = q.data();
    args.q_stride = num_heads * head_dim;
    args.out = out;
    args.out_stride = num_heads * head_dim;
    args.query_positions = query_positions.data();
    args.k_cache = k.data();
    args.v_cache = v.data();
    args.capacity = capacity;
    args.slot_positions = slot_positions.data();
    args.num_slots = num_slots;
    args.num_heads = num_heads;
    args.num_kv_heads = num_kv_heads;
    args.head_dim = head_dim;
    args.scale = scale;
    return args;
  }
};

Problem MakeProblem(uint64_t seed, int64_t num_queries, int64_t num_heads, int64_t num_kv_heads,
                    int64_t head_dim, int64_t num_slots, float q_scale = 1.0f) {
  Problem p;
  p.num_queries = num_queries;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = head_dim;
  p.capacity = num_slots + 5;  // rows past num_slots hold junk the kernel must not read
  p.num_slots = num_slots;
  p.q = RandomFloats(seed, num_queries * num_heads * head_dim, q_scale);
  const std::vector<float> k = RandomFloats(seed + 1, num_kv_heads * p.capacity * head_dim);
  const std::vector<float> v = RandomFloats(seed + 2, num_kv_heads * p.capacity * head_dim);
  for (float x : k) p.k.push_back(F32ToF16(x));
  for (float x : v) p.v.push_back(F32ToF16(x));
  p.slot_positions.resize(num_slots);
  std::iota(p.slot_positions.begin(), p.slot_positions.end(), 0);
  p.query_positions.assign(num_queries, static_cast<int32_t>(num_slots - 1));
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return p;
}

// out for query i, head h, by the definition, in double.
std::vector<double> Naive(const Problem& p, int64_t i, int64_t h) {
  const int64_t hd = p.head_dim;
  std::vector<double> out(hd, 0.0);
  const int32_t position = p.query_positions[i];
  if (position < 0) return out;
  const int64_t kv_head = h / (p.num_heads / p.num_kv_heads);
  const float* q = p.q.data() + (i * p.num_heads + h) * hd;
  std::vector<double> scores;
  std::vector<int64_t> slots;
  for (int64_t s = 0; s < p.num_slots; ++s) {
    if (p.slot_positions[s] < 0 || p.slot_positions[s] > position) continue;
    const uint16_t* k = p.k.data() + (kv_head * p.capacity + s) * hd;
    double dot = 0.0;
    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * F16ToF32(k[d]);
    scores.push_back(dot * p.scale);
    slots.push_back(s);
  }
  if (scores.empty()) return out;
  const double max = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (double& s : scores) sum += (s = std::exp(s - max));
  for (size_t j = 0; j < slots.size(); ++j) {
    const uint16_t* v = p.v.data() + (kv_head * p.capacity + slots[j]) * hd;
    for (int64_t d = 0; d < hd; ++d) out[d] += scores[j] / sum * F16ToF32(v[d]);
  }
  return out;
}

std::vector<const KernelSet*> AllSets() {
  std::vector<const KernelSet*> sets = SimdSets();
  sets.push_back(&ScalarKernels());
  return sets;
}

// Runs the kernel on the ranges and checks: inside, the naive result; outside, untouched.
void Check(const Problem& p, const std::string& what, int64_t query_begin, int64_t query_end,
           int64_t head_begin, int64_t head_end, double tolerance = 2e-4) {
  for (const KernelSet* set : AllSets()) {
    std::vector<float> out(p.num_queries * p.num_heads * p.head_dim, kSentinel);
    set->attention(p.Args(out.data()), query_begin, query_end, head_begin, head_end);
    for (int64_t i = 0; i < p.num_queries; ++i) {
      for (int64_t h = 0; h < p.num_heads; ++h) {
        const float* got = out.data() + (i * p.num_heads + h) * p.head_dim;
        const bool inside = i >= query_begin && i < query_end && h >= head_begin && h < head_end;
        if (!inside) {
          for (int64_t d = 0; d < p.head_dim; ++d) ASSERT_EQ(got[d], kSentinel);
          continue;
        }
        const std::vector<double> want = Naive(p, i, h);
        for (int64_t d = 0; d < p.head_dim; ++d) {
          ASSERT_NEAR(got[d], want[d], tolerance)
              << what << " " << set->name << " query " << i << " head " << h << " dim " << d;
        }
      }
    }
  }
}

void CheckAll(const Problem& p, const std::string& what, double tolerance = 2e-4) {
  Check(p, what, 0, p.num_queries, 0, p.num_heads, tolerance);
}

TEST(AttentionTest, SingleQuerySeesEveryEarlierSlot) {
  const Problem p = MakeProblem(1, 1, 4, 2, 64, 40);
  CheckAll(p, "decode");
}

TEST(AttentionTest, CausalPrefillWithGqa) {
  // smollm2 shapes: 9 heads over 3 kv heads, head_dim 64. A chunk of 37 queries at
  // positions 100..136 over a cache that holds them.
  Problem p = MakeProblem(2, 37, 9, 3, 64, 137);
  for (int64_t i = 0; i < p.num_queries; ++i) p.query_positions[i] = static_cast<int32_t>(100 + i);
  CheckAll(p, "prefill");
}

TEST(AttentionTest, LongContext) {
  // qwen3-like heads (head_dim 128, 16 over 8) and 3000 slots; queries near the start, the
  // middle and the end.
  Problem p = MakeProblem(3, 3, 16, 8, 128, 3000);
  p.query_positions = {2999, 1500, 5};
  CheckAll(p, "long");
}

TEST(AttentionTest, NonContiguousPositionsEmptySlotsAndPadding) {
  Problem p = MakeProblem(4, 6, 4, 1, 32, 300);
  // Slots hold positions 10, 13, 16, ... in shuffled order, with some slots empty.
  Random rng(9);
  for (int64_t s = 0; s < p.num_slots; ++s) p.slot_positions[s] = static_cast<int32_t>(10 + 3 * s);
  for (int64_t s = p.num_slots - 1; s > 0; --s) {
    std::swap(p.slot_positions[s], p.slot_positions[rng.NextBelow(s + 1)]);
  }
  for (int64_t s = 0; s < p.num_slots; s += 7) p.slot_positions[s] = -1;
  // A query in the middle, one at the end, padding, one before every slot (sees nothing),
  // one exactly at a slot's position, one between positions.
  p.query_positions = {460, 1000, -1, 3, 10 + 3 * 50, 10 + 3 * 50 + 1};
  CheckAll(p, "shuffled");
}

TEST(AttentionTest, LargeScoresMoveTheRunningMax) {
  // Scores grow along the slots, so the running max changes in every tile.
  Problem p = MakeProblem(5, 2, 2, 2, 64, 200);
  for (int64_t s = 0; s < p.num_slots; ++s) {
    for (int64_t kv = 0; kv < p.num_kv_heads; ++kv) {
      for (int64_t d = 0; d < p.head_dim; ++d) {
        uint16_t& k = p.k[(kv * p.capacity + s) * p.head_dim + d];
        k = F32ToF16(F16ToF32(k) * 0.2f + 0.02f * static_cast<float>(s) / 10.0f);
      }
    }
  }
  for (float& x : p.q) x = std::fabs(x) * 3.0f;
  p.query_positions = {199, 120};
  CheckAll(p, "large scores", 5e-4);
}

TEST(AttentionTest, PartialRangesLeaveTheRestUntouched) {
  Problem p = MakeProblem(6, 5, 8, 2, 64, 70);
  for (int64_t i = 0; i < p.num_queries; ++i) p.query_positions[i] = static_cast<int32_t>(60 + i);
  Check(p, "ranges", 1, 4, 2, 7);
  Check(p, "one head", 0, 5, 5, 6);
  Check(p, "empty", 2, 2, 0, 8);
}

// Every width of a head that the vector loops split differently: 8 (stories260K), 24, 40, 48,
// 80, 96, 112 and 256 (the largest) dims take the 16-wide, 8-wide and remainder paths.
TEST(AttentionTest, EveryHeadWidthTheVectorLoopsSplit) {
  uint64_t seed = 20;
  for (int64_t head_dim : {8, 24, 40, 48, 80, 96, 112, 256}) {
    Problem p = MakeProblem(++seed, 5, 4, 2, head_dim, 75);
    for (int64_t i = 0; i < p.num_queries; ++i) {
      p.query_positions[i] = static_cast<int32_t>(40 + 8 * i);
    }
    CheckAll(p, "head_dim " + std::to_string(head_dim));
  }
}

// A query's output is bit-identical whichever other queries share its call (what prefix
// reuse and a prompt prefilled in several calls rely on): all 45 queries at once, one by one,
// and in uneven ranges, on smollm2's heads (3 per kv head, so blocks of rows cut queries'
// heads differently) and on a wide group (20 heads over one kv head).
TEST(AttentionTest, AQueryDoesNotDependOnTheQueriesComputedWithIt) {
  for (const auto& [num_heads, num_kv_heads] : {std::pair<int64_t, int64_t>{9, 3}, {20, 1}}) {
    Problem p = MakeProblem(11, 45, num_heads, num_kv_heads, 64, 170);
    for (int64_t i = 0; i < p.num_queries; ++i) {
      p.query_positions[i] = static_cast<int32_t>(125 + i);
    }
    p.query_positions[7] = -1;  // padding in the middle
    const size_t size = static_cast<size_t>(p.num_queries * p.num_heads * p.head_dim);
    for (const KernelSet* set : AllSets()) {
      std::vector<float> all(size, kSentinel);
      set->attention(p.Args(all.data()), 0, p.num_queries, 0, p.num_heads);
      std::vector<float> one_by_one(size, kSentinel);
      for (int64_t i = 0; i < p.num_queries; ++i) {
        set->attention(p.Args(one_by_one.data()), i, i + 1, 0, p.num_heads);
      }
      std::vector<float> ranges(size, kSentinel);
      for (const auto& [begin, end] :
           {std::pair<int64_t, int64_t>{0, 5}, {5, 6}, {6, 29}, {29, 45}}) {
        set->attention(p.Args(ranges.data()), begin, end, 0, p.num_heads);
      }
      EXPECT_EQ(0, std::memcmp(all.data(), one_by_one.data(), size * sizeof(float)))
          << set->name << " " << num_heads << " heads: one query per call";
      EXPECT_EQ(0, std::memcmp(all.data(), ranges.data(), size * sizeof(float)))
          << set->name << " " << num_heads << " heads: uneven ranges";
    }
    CheckAll(p, std::to_string(num_heads) + " heads");
  }
}

TEST(AttentionTest, AllQueriesPaddingGiveZeros) {
  Problem p = MakeProblem(7, 3, 2, 1, 16, 10);
  p.query_positions = {-1, -1, -1};
  CheckAll(p, "padding");
}

}  // namespace
}  // namespace reprise::kernels
