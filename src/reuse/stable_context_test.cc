#include "reuse/stable_context.h"

#include <gtest/gtest.h>

#include "kv/memory_chunk_cache.h"
#include "reuse/planner_test_util.h"
#include "reuse/token_test_util.h"

namespace reprise::reuse {
namespace {

using testing_plans::CachePath;
using testing_plans::MakePrompt;
using testing_plans::Prompt;
using testing_tokens::Range;
using testing_tokens::Tokens;

const Tokens kSystem = Range(1, 40);
const Tokens kTurn1 = Range(1000, 64);
const Tokens kTurn2 = Range(2000, 64);
const Tokens kTurn3 = Range(3000, 64);
const Tokens kQuestion = Range(9000, 10);

LinkLookup LookupIn(kv::ChunkCache& cache) {
  return [&cache](kv::ChunkId id) { return cache.LinkOf(id); };
}

// A chat whose window dropped its oldest turn: the history after the cut is its cached
// context minus that turn. Counts restart at the cut and run on across the turns after it.
TEST(StableContextTest, AMovedHistoryKeepsItsContextButTheDroppedTurn) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kTurn1, kTurn2, kTurn3, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn2, kTurn3, Range(9500, 10)});
  Result<ReusePlan> plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  const std::vector<int> lengths = StableContextLengths(*plan, p.chunks, LookupIn(cache));
  ASSERT_EQ(lengths.size(), p.tokens.size());
  const int turn2 = p.chunks[1].begin, turn3 = p.chunks[2].begin, question = p.chunks[3].begin;
  ASSERT_EQ(plan->tokens[static_cast<size_t>(turn2)].kind, TokenKind::kNonPrefix);
  EXPECT_EQ(lengths[5], 5);      // prefix: everything before it
  EXPECT_EQ(lengths[turn2], 0);  // right after the deleted turn
  EXPECT_EQ(lengths[turn2 + 10], 10);
  EXPECT_EQ(lengths[turn3], 64);  // turn 2 came right before it when cached, and does now
  EXPECT_EQ(lengths[turn3 + 63], 127);
  EXPECT_EQ(lengths[question], 128);  // new: recomputed, and in place

  // Without a way to look up links the deletion cannot be told from a reordering.
  EXPECT_EQ(StableContextLengths(*plan, p.chunks, nullptr)[turn3], -1);
}

// A chunk too short to reuse at a new position is computed anew; the text after it still
// follows it as when cached.
TEST(StableContextTest, AShortTurnComputedAnewKeepsTheHistoryAfterItInPlace) {
  kv::MemoryChunkCache cache(1 << 20);
  const Tokens short_turn = Range(5000, 10);
  CachePath(cache, {kSystem, kTurn1, kTurn2, short_turn, kTurn3, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn2, short_turn, kTurn3, Range(9500, 10)});
  Result<ReusePlan> plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->tokens[static_cast<size_t>(p.chunks[2].begin)].kind, TokenKind::kNew);
  const std::vector<int> lengths = StableContextLengths(*plan, p.chunks, LookupIn(cache));
  EXPECT_EQ(lengths[p.chunks[3].begin], 64 + 10);
  // A different short turn there breaks it.
  const Prompt q = MakePrompt({kSystem, kTurn2, Range(6000, 10), kTurn3, Range(9500, 10)});
  plan = PlanReuse(q.tokens, q.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(StableContextLengths(*plan, q.chunks, LookupIn(cache))[q.chunks[3].begin], -1);
}

// Documents in a new order: the one after the system prompt lost only the document cached
// before it (a deletion), the next one lost its neighbour and gained another.
TEST(StableContextTest, AReorderedDocumentHasNoStableContext) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kTurn1, kTurn2, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn2, kTurn1, kQuestion});
  Result<ReusePlan> plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  const std::vector<int> lengths = StableContextLengths(*plan, p.chunks, LookupIn(cache));
  EXPECT_EQ(lengths[p.chunks[1].begin], 0);
  EXPECT_EQ(lengths[p.chunks[1].begin + 63], 63);
  EXPECT_EQ(lengths[p.chunks[2].begin], -1);
  EXPECT_EQ(lengths[p.chunks[2].begin + 40], -1);
}

}  // namespace
}  // namespace reprise::reuse
