#include "store/eviction_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "base/random.h"

namespace reprise::store {
namespace {

using Ids = std::vector<uint64_t>;

ChunkInfo Chunk(uint64_t id, int64_t bytes = 100, bool exact = false, uint64_t parent = 0) {
  ChunkInfo chunk;
  chunk.id = id;
  chunk.parent = parent;
  chunk.exact = exact;
  chunk.bytes = bytes;
  chunk.num_tokens = static_cast<int>(bytes / 10);
  return chunk;
}

CostModel Costs() {
  CostModel costs;
  costs.read_bytes_per_ms = 10;
  costs.compute_ms_per_token = 1;
  costs.nonprefix_extra_ms_per_token = 0.25;
  return costs;
}

LocalityModel Model(const LocalityOptions& options = {}) {
  return std::move(LocalityModel::Create(options)).value();
}

CostAwareEvictionPolicy Policy(const LocalityModel& model, StoreTier tier,
                               bool rank_per_byte = true) {
  CostAwareOptions options;
  options.tier = tier;
  options.costs = Costs();
  options.rank_per_byte = rank_per_byte;
  return std::move(CostAwareEvictionPolicy::Create(&model, options)).value();
}

TEST(EvictionPolicyTest, CreateRejectsBadInputs) {
  CostAwareOptions options;
  options.costs = Costs();
  EXPECT_FALSE(CostAwareEvictionPolicy::Create(nullptr, options).ok());
  LocalityModel model = Model();
  options.costs.read_bytes_per_ms = 0;
  EXPECT_FALSE(CostAwareEvictionPolicy::Create(&model, options).ok());
}

TEST(EvictionPolicyTest, LruEvictsLeastRecentlyTouchedFirst) {
  LruEvictionPolicy lru;
  lru.Touch(3, 1);
  lru.Touch(1, 2);
  lru.Touch(2, 3);
  const std::vector<ChunkInfo> chunks = {Chunk(1), Chunk(2), Chunk(3), Chunk(4)};
  const VictimSelection victims = lru.SelectVictims(chunks, 250, 10);
  EXPECT_EQ(victims.ids, (Ids{4, 3, 1}));  // 4 never touched
  EXPECT_EQ(victims.bytes_freed, 300);
  lru.Forget(3);
  EXPECT_EQ(lru.SelectVictims(chunks, 100, 10).ids, (Ids{3}));  // forgotten = never touched
}

TEST(EvictionPolicyTest, LruBreaksTiesByTouchOrderThenId) {
  LruEvictionPolicy lru;
  lru.Touch(5, 1);
  lru.Touch(2, 1);
  const std::vector<ChunkInfo> chunks = {Chunk(2), Chunk(5), Chunk(9), Chunk(7)};
  EXPECT_EQ(lru.SelectVictims(chunks, 400, 1).ids, (Ids{7, 9, 5, 2}));
}

TEST(EvictionPolicyTest, NothingToFreeSelectsNothing) {
  LruEvictionPolicy lru;
  LocalityModel model = Model();
  const std::vector<ChunkInfo> chunks = {Chunk(1)};
  EXPECT_TRUE(lru.SelectVictims(chunks, 0, 0).ids.empty());
  EXPECT_TRUE(Policy(model, StoreTier::kPool).SelectVictims(chunks, -5, 0).ids.empty());
}

TEST(EvictionPolicyTest, PinnedChunksAreNeverEvicted) {
  LocalityModel model = Model();
  LruEvictionPolicy lru;
  const CostAwareEvictionPolicy pool = Policy(model, StoreTier::kPool);
  const CostAwareEvictionPolicy flash = Policy(model, StoreTier::kFlash);
  std::vector<ChunkInfo> chunks;
  for (uint64_t id = 1; id <= 6; ++id) {
    chunks.push_back(Chunk(id, 100, id % 2 == 0, id > 1 ? id - 1 : 0));
    chunks.back().pinned = id != 4;
  }
  for (const EvictionPolicy* policy :
       std::initializer_list<const EvictionPolicy*>{&lru, &pool, &flash}) {
    const VictimSelection victims = policy->SelectVictims(chunks, 600, 0);
    EXPECT_EQ(victims.ids, (Ids{4})) << policy->name();
    EXPECT_EQ(victims.bytes_freed, 100) << policy->name();  // less than asked: all it could
  }
}

TEST(EvictionPolicyTest, VictimsFreeAtLeastTheBytesAskedAndNoMore) {
  Random random(3);
  LocalityModel model = Model();
  LruEvictionPolicy lru;
  std::vector<ChunkInfo> chunks;
  for (uint64_t id = 1; id <= 50; ++id) {
    chunks.push_back(Chunk(id, 10 + static_cast<int64_t>(random.NextBelow(500)),
                           random.NextBelow(2) == 0, id > 5 ? 1 + random.NextBelow(id - 1) : 0));
  }
  for (int r = 0; r < 30; ++r) {
    std::vector<ChunkInfo> used;
    for (int i = 0; i < 4; ++i) used.push_back(chunks[random.NextBelow(chunks.size())]);
    model.RecordRequest(used, r);
    for (const ChunkInfo& c : used) lru.Touch(c.id, r);
  }
  const CostAwareEvictionPolicy pool = Policy(model, StoreTier::kPool);
  const CostAwareEvictionPolicy flash = Policy(model, StoreTier::kFlash);
  for (const EvictionPolicy* policy :
       std::initializer_list<const EvictionPolicy*>{&lru, &pool, &flash}) {
    for (int64_t ask : {1, 300, 2000, 7000}) {
      const VictimSelection victims = policy->SelectVictims(chunks, ask, 30);
      int64_t total = 0;
      int64_t last = 0;
      for (uint64_t id : victims.ids) {
        last =
            std::find_if(chunks.begin(), chunks.end(), [&](auto& c) { return c.id == id; })->bytes;
        total += last;
      }
      EXPECT_EQ(total, victims.bytes_freed);
      EXPECT_GE(victims.bytes_freed, ask) << policy->name();
      EXPECT_LT(victims.bytes_freed - last, ask) << policy->name();  // stops when done
    }
  }
}

TEST(EvictionPolicyTest, PoolEvictsNonPrefixChunksFirstThenLowScore) {
  LocalityModel model = Model();
  // 1: exact but cold; 2: non-prefix but hot; 3: non-prefix and cold.
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1, 100, true)}, 0);
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(3)}, 0);
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(2)}, 5000);
  const std::vector<ChunkInfo> chunks = {Chunk(1, 100, true), Chunk(2), Chunk(3)};
  // Non-prefix chunks cost nothing to reload (their load overlaps compute): first, the
  // colder one before the hotter one; the exact chunk last.
  EXPECT_EQ(Policy(model, StoreTier::kPool).SelectVictims(chunks, 300, 5000).ids, (Ids{3, 2, 1}));
}

TEST(EvictionPolicyTest, PoolKeepsRecentPrefixChunks) {
  LocalityModel model = Model();
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1, 100, true)}, 0);
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(2, 100, true)}, 1000);
  const std::vector<ChunkInfo> chunks = {Chunk(2, 100, true), Chunk(1, 100, true)};
  EXPECT_EQ(Policy(model, StoreTier::kPool).SelectVictims(chunks, 100, 1000).ids, (Ids{1}));
}

TEST(EvictionPolicyTest, FlashEvictsLeavesBeforeTheirAncestorsOnTies) {
  LocalityOptions options;
  options.weight_spatial = 0;  // no subtree bonus for the child: scores tie exactly
  LocalityModel model = Model(options);
  // Chain 5 -> 10, neither exact (no cascade), same size: equal score and cost.
  const std::vector<ChunkInfo> chunks = {Chunk(5), Chunk(10, 100, false, 5)};
  model.RecordRequest(chunks, 0);
  const CostAwareEvictionPolicy flash = Policy(model, StoreTier::kFlash);
  const std::vector<RankedChunk> ranked = flash.Rank(chunks, 0);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].priority, ranked[1].priority);
  EXPECT_EQ(flash.SelectVictims(chunks, 100, 0).ids, (Ids{10}));  // the leaf, despite its id
  // Never-used chunks (score 0) tie too.
  LocalityModel empty = Model(options);
  EXPECT_EQ(Policy(empty, StoreTier::kFlash).SelectVictims(chunks, 200, 0).ids, (Ids{10, 5}));
  // In the pool the tree plays no part: ties go by id.
  EXPECT_EQ(Policy(model, StoreTier::kPool).SelectVictims(chunks, 100, 0).ids, (Ids{5}));
}

TEST(EvictionPolicyTest, FlashKeepsPrefixRootsWhoseSubtreeIsHit) {
  LocalityModel model = Model();
  // 1 -> 2 is a prefix chain; 3 an exact root of its own, used exactly as often as 1.
  const std::vector<ChunkInfo> chunks = {Chunk(1, 100, true), Chunk(2, 100, true, 1),
                                         Chunk(3, 100, true)};
  for (int r = 0; r < 3; ++r) model.RecordRequest(chunks, r);
  const CostAwareEvictionPolicy flash = Policy(model, StoreTier::kFlash);
  const std::vector<RankedChunk> ranked = flash.Rank(chunks, 3);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].id, 3u);  // same score as 1, but no subtree to break
  const auto cost_of = [&](uint64_t id) {
    return std::find_if(ranked.begin(), ranked.end(), [&](auto& r) { return r.id == id; })->cost_ms;
  };
  EXPECT_GT(cost_of(1), cost_of(3));
  EXPECT_EQ(flash.SelectVictims(chunks, 100, 3).ids, (Ids{3}));
}

TEST(EvictionPolicyTest, RankPerByteDividesByBytes) {
  LocalityModel model = Model();
  const std::vector<ChunkInfo> chunks = {Chunk(1, 100, true), Chunk(2, 400, true)};
  model.RecordRequest(chunks, 0);
  const CostAwareEvictionPolicy plain = Policy(model, StoreTier::kPool, false);
  const CostAwareEvictionPolicy per_byte = Policy(model, StoreTier::kPool);
  for (const RankedChunk& r : plain.Rank(chunks, 0)) {
    EXPECT_DOUBLE_EQ(r.priority, r.score * r.cost_ms);
  }
  for (const RankedChunk& r : per_byte.Rank(chunks, 0)) {
    EXPECT_DOUBLE_EQ(r.priority, r.score * r.cost_ms / chunks[r.index].bytes);
  }
  // Score x cost keeps the large chunk (higher reload time); per byte they tie.
  EXPECT_EQ(plain.SelectVictims(chunks, 1, 0).ids, (Ids{1}));
}

TEST(EvictionPolicyTest, OrderIsDeterministicAndIndependentOfInputOrder) {
  Random random(11);
  LocalityModel model = Model();
  LruEvictionPolicy lru;
  std::vector<ChunkInfo> chunks;
  for (uint64_t id = 1; id <= 40; ++id) {
    chunks.push_back(Chunk(id, 50 + static_cast<int64_t>(random.NextBelow(200)),
                           random.NextBelow(3) != 0, id > 3 ? 1 + random.NextBelow(id - 1) : 0));
  }
  for (int r = 0; r < 20; ++r) {
    std::vector<ChunkInfo> used;
    for (int i = 0; i < 5; ++i) used.push_back(chunks[random.NextBelow(chunks.size())]);
    model.RecordRequest(used, 10.0 * r);
    for (const ChunkInfo& c : used) lru.Touch(c.id, 10.0 * r);
  }
  const CostAwareEvictionPolicy pool = Policy(model, StoreTier::kPool);
  const CostAwareEvictionPolicy flash = Policy(model, StoreTier::kFlash);
  std::vector<ChunkInfo> shuffled = chunks;
  for (size_t i = shuffled.size(); i > 1; --i) {
    std::swap(shuffled[i - 1], shuffled[random.NextBelow(i)]);
  }
  for (const EvictionPolicy* policy :
       std::initializer_list<const EvictionPolicy*>{&lru, &pool, &flash}) {
    const VictimSelection a = policy->SelectVictims(chunks, 3000, 200);
    const VictimSelection b = policy->SelectVictims(chunks, 3000, 200);
    const VictimSelection c = policy->SelectVictims(shuffled, 3000, 200);
    EXPECT_EQ(a.ids, b.ids) << policy->name();
    EXPECT_EQ(a.ids, c.ids) << policy->name();
  }
}

}  // namespace
}  // namespace reprise::store
