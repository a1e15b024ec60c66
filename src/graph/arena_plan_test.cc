#include "graph/arena_plan.h"

#include <gtest/gtest.h>

#include "base/random.h"

namespace reprise::graph {
namespace {

TEST(ArenaPlanTest, DisjointLifetimesShareMemory) {
  std::vector<BufferRequest> buffers = {{"a", 1000, 0, 1}, {"b", 1000, 2, 3}, {"c", 500, 1, 2}};
  ArenaPlan plan = PlanArena(buffers);
  ASSERT_TRUE(IsValidPlan(buffers, plan));
  // a and b never live together, so the arena holds two buffers' worth, not three.
  EXPECT_LT(plan.arena_bytes, 2600);
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
}

TEST(ArenaPlanTest, OverlappingLifetimesNeverOverlapInMemory) {
  Random rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> buffers;
    const int n = 1 + static_cast<int>(rng.NextBelow(40));
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng.NextBelow(50));
      buffers.push_back({"b" + std::to_string(i), static_cast<int64_t>(rng.NextBelow(5000)), first,
                         first + static_cast<int>(rng.NextBelow(20))});
    }
    ArenaPlan plan = PlanArena(buffers);
    ASSERT_TRUE(IsValidPlan(buffers, plan)) << "trial " << trial;
    EXPECT_LE(plan.arena_bytes, plan.sum_of_buffer_bytes + kArenaAlignment * n);
  }
}

TEST(ArenaPlanTest, OffsetsAreAligned) {
  std::vector<BufferRequest> buffers = {{"a", 3, 0, 5}, {"b", 7, 0, 5}, {"c", 1, 0, 5}};
  ArenaPlan plan = PlanArena(buffers);
  for (int64_t offset : plan.offsets) EXPECT_EQ(offset % kArenaAlignment, 0);
  EXPECT_TRUE(IsValidPlan(buffers, plan));
}

}  // namespace
}  // namespace reprise::graph
