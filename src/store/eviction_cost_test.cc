#include "store/eviction_cost.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace reprise::store {
namespace {

ChunkInfo Chunk(uint64_t id, uint64_t parent, bool exact, int num_tokens = 100) {
  ChunkInfo chunk;
  chunk.id = id;
  chunk.parent = parent;
  chunk.exact = exact;
  chunk.num_tokens = num_tokens;
  chunk.bytes = int64_t{num_tokens} * 1000;
  return chunk;
}

CostModel Costs() {
  CostModel costs;
  costs.read_bytes_per_ms = 1e6;   // 1 GB/s
  costs.compute_ms_per_token = 2;  // full prefill
  costs.nonprefix_extra_ms_per_token = 0.5;
  return costs;
}

LocalityModel Model() { return std::move(LocalityModel::Create({})).value(); }

TEST(EvictionCostTest, ValidatesCostModel) {
  EXPECT_TRUE(ValidateCostModel(Costs()).ok());
  CostModel bad = Costs();
  bad.read_bytes_per_ms = 0;
  EXPECT_FALSE(ValidateCostModel(bad).ok());
  bad = Costs();
  bad.compute_ms_per_token = -1;
  EXPECT_FALSE(ValidateCostModel(bad).ok());
  bad = Costs();
  bad.nonprefix_extra_ms_per_token = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(ValidateCostModel(bad).ok());
}

TEST(EvictionCostTest, PoolCostIsReloadTimeForPrefixChunksOnly) {
  const ChunkInfo exact = Chunk(1, 0, true, 500);  // 500 kB
  const ChunkInfo nonprefix = Chunk(2, 1, false, 500);
  EXPECT_DOUBLE_EQ(PoolEvictionCostMs(exact, Costs()), 0.5);
  EXPECT_EQ(PoolEvictionCostMs(nonprefix, Costs()), 0);
  const std::vector<ChunkInfo> chunks = {exact, nonprefix};
  LocalityModel model = Model();
  const std::vector<double> cost = EvictionCostsMs(chunks, StoreTier::kPool, Costs(), model, 0);
  EXPECT_DOUBLE_EQ(cost[0], 0.5);
  EXPECT_EQ(cost[1], 0);
}

TEST(EvictionCostTest, FlashCostOfALeafIsItsRecompute) {
  LocalityModel model = Model();
  const std::vector<ChunkInfo> chunks = {Chunk(1, 0, true, 300), Chunk(2, 0, false, 40)};
  const std::vector<double> cost = FlashEvictionCostsMs(chunks, Costs(), model, 0);
  EXPECT_DOUBLE_EQ(cost[0], 600);
  EXPECT_DOUBLE_EQ(cost[1], 80);
}

TEST(EvictionCostTest, CascadeGrowsWithDescendantHits) {
  // Prefix chain 1 -> 2 -> 3, all exact.
  const std::vector<ChunkInfo> chain = {Chunk(1, 0, true), Chunk(2, 1, true), Chunk(3, 2, true)};
  LocalityModel model = Model();
  // No hits recorded: the cascade weighs nothing; each pays its own recompute.
  std::vector<double> cost = FlashEvictionCostsMs(chain, Costs(), model, 0);
  EXPECT_DOUBLE_EQ(cost[0], 200);
  EXPECT_DOUBLE_EQ(cost[1], 200);

  model.RecordRequest(chain, 0);  // every chunk hit once: frequency 1 / (1 + 1)
  cost = FlashEvictionCostsMs(chain, Costs(), model, 0);
  const double per_descendant = 0.5 * 100 * 0.5;  // frequency x tokens x extra
  EXPECT_DOUBLE_EQ(cost[2], 200);
  EXPECT_DOUBLE_EQ(cost[1], 200 + per_descendant);
  EXPECT_DOUBLE_EQ(cost[0], 200 + 2 * per_descendant);

  // More hits on the leaf raise the cost of every ancestor, not of the leaf.
  const double before_root = cost[0];
  const double before_mid = cost[1];
  for (int i = 1; i <= 5; ++i) model.RecordRequest(std::span(chain).subspan(2), i);
  cost = FlashEvictionCostsMs(chain, Costs(), model, 5);
  EXPECT_GT(cost[0], before_root);
  EXPECT_GT(cost[1], before_mid);
  EXPECT_DOUBLE_EQ(cost[2], 200);
}

TEST(EvictionCostTest, CascadeCoversTheSubtreeThroughExactChunksOnly) {
  // 1 (exact) has children 2 (exact) and 3 (not exact); 2 has child 4 (exact); 3 has child 5
  // (marked exact, but unreachable by prefix through 3, so it adds nothing).
  const std::vector<ChunkInfo> chunks = {Chunk(1, 0, true), Chunk(2, 1, true), Chunk(3, 1, false),
                                         Chunk(4, 2, true), Chunk(5, 3, true)};
  LocalityModel model = Model();
  model.RecordRequest(chunks, 0);
  const std::vector<double> cost = FlashEvictionCostsMs(chunks, Costs(), model, 0);
  const double per_descendant = 0.5 * 100 * 0.5;
  EXPECT_DOUBLE_EQ(cost[0], 200 + 2 * per_descendant);  // 2 and 4
  EXPECT_DOUBLE_EQ(cost[1], 200 + per_descendant);      // 4
  EXPECT_DOUBLE_EQ(cost[2], 200);                       // non-exact: no cascade
  EXPECT_DOUBLE_EQ(cost[3], 200);
  EXPECT_DOUBLE_EQ(cost[4], 200);
}

TEST(EvictionCostTest, RedundantCopiesCostOnlyTheirPrefixValue) {
  LocalityModel model = Model();
  std::vector<ChunkInfo> chunks = {Chunk(3, 0, false), Chunk(9, 0, true), Chunk(4, 0, false),
                                   Chunk(6, 0, false), Chunk(8, 0, true), Chunk(7, 0, false)};
  // Content 50: an exact copy (9, the primary) and a non-exact one (3). Content 60: two
  // non-exact copies, 4 the primary (lower id). Content 70: two exact copies, 7 has none.
  const uint64_t contents[] = {50, 50, 60, 60, 70, 0};
  for (size_t i = 0; i < chunks.size(); ++i) chunks[i].content = contents[i];
  chunks[5].content = 0;  // no hash: never redundant
  chunks.push_back(Chunk(5, 0, true));
  chunks.back().content = 70;
  const std::vector<double> cost = FlashEvictionCostsMs(chunks, Costs(), model, 0);
  EXPECT_DOUBLE_EQ(cost[0], 0);    // 3: a spare copy of 50
  EXPECT_DOUBLE_EQ(cost[1], 200);  // 9: primary
  EXPECT_DOUBLE_EQ(cost[2], 200);  // 4: primary of 60
  EXPECT_DOUBLE_EQ(cost[3], 0);    // 6
  EXPECT_DOUBLE_EQ(cost[4], 50);   // 8: exact spare of 70: loses prefix reuse only
  EXPECT_DOUBLE_EQ(cost[5], 200);  // 7: no content hash
  EXPECT_DOUBLE_EQ(cost[6], 200);  // 5: primary of 70 (exact, lower id than 8)
}

TEST(EvictionCostTest, ParentsOutsideTheSpanAndCyclesAreSafe) {
  LocalityModel model = Model();
  // 2's parent 99 is not on this tier: 2 is a root here. 3 and 4 name each other.
  const std::vector<ChunkInfo> chunks = {Chunk(2, 99, true), Chunk(3, 4, true), Chunk(4, 3, true),
                                         Chunk(5, 5, true)};
  model.RecordRequest(chunks, 0);
  const std::vector<double> cost = FlashEvictionCostsMs(chunks, Costs(), model, 0);
  for (double c : cost) EXPECT_DOUBLE_EQ(c, 200);
  EXPECT_EQ(HasChildren(chunks), (std::vector<bool>{false, true, true, false}));
}

}  // namespace
}  // namespace reprise::store
