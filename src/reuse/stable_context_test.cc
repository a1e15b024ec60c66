#include "reuse/stable_context.h"

#include <gtest/gtest.h>

#include "kv/memory_chunk_cache.h"
#include "reuse/content_defined_chunking.h"
#include "reuse/planner_test_util.h"
#include "reuse/token_test_util.h"

namespace reprise::reuse {
namespace {

using testing_plans::CachePath;
using testing_plans::MakePrompt;
using testing_plans::Prompt;
using testing_tokens::Concat;
using testing_tokens::Range;
using testing_tokens::Tokens;

const Tokens kSystem = Range(1, 40);
const Tokens kTurn1 = Range(1000, 64);
const Tokens kTurn2 = Range(2000, 64);
const Tokens kTurn3 = Range(3000, 64);
const Tokens kTurn4 = Range(4000, 64);
const Tokens kTurn5 = Range(5000, 64);
const Tokens kQuestion = Range(9000, 10);
// Documents longer than the window the rule relies on (128 tokens).
const Tokens kDocument1 = Range(11000, 200);
const Tokens kDocument2 = Range(12000, 200);
const Tokens kDocument3 = Range(13000, 200);

EntryLookup LookupIn(kv::ChunkCache& cache) {
  return [&cache](kv::ChunkId id) { return cache.Peek(id); };
}

struct Judged {
  ReusePlan plan;
  std::vector<int> lengths;
  std::vector<int> deleted;
};

Judged Judge(kv::ChunkCache& cache, const Prompt& p) {
  Result<ReusePlan> plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  EXPECT_TRUE(plan.ok()) << plan.error().ToString();
  Judged j;
  j.plan = std::move(plan).value();
  j.lengths = StableContextLengths(p.tokens, j.plan, LookupIn(cache), &j.deleted);
  EXPECT_EQ(j.lengths.size(), p.tokens.size());
  return j;
}

TokenKind KindAt(const Judged& j, int i) { return j.plan.tokens[static_cast<size_t>(i)].kind; }

// Every token in [begin, end) is reused and of no stable context.
void ExpectNoStableContext(const Judged& j, int begin, int end) {
  for (int i = begin; i < end; ++i) {
    ASSERT_EQ(KindAt(j, i), TokenKind::kNonPrefix) << i;
    EXPECT_EQ(j.lengths[static_cast<size_t>(i)], -1) << i;
  }
}

// A chat whose window dropped its oldest turn: the history after the cut is its cached
// context minus that turn. Counts restart at the cut and run on across the turns after it.
TEST(StableContextTest, AMovedHistoryKeepsItsContextButTheDroppedTurn) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kTurn1, kTurn2, kTurn3, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn2, kTurn3, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  const int turn2 = p.chunks[1].begin, turn3 = p.chunks[2].begin, question = p.chunks[3].begin;
  ASSERT_EQ(KindAt(j, turn2), TokenKind::kNonPrefix);
  EXPECT_EQ(j.lengths[5], 5);      // prefix: everything before it
  EXPECT_EQ(j.lengths[turn2], 0);  // right after the deleted turn
  EXPECT_EQ(j.lengths[turn2 + 10], 10);
  EXPECT_EQ(j.lengths[turn3], 64);  // turn 2 came right before it when cached, and does now
  EXPECT_EQ(j.lengths[turn3 + 63], 127);
  EXPECT_EQ(j.lengths[question], -1);  // new: recomputed anyway
  EXPECT_EQ(j.deleted[turn2], 64);     // the dropped turn
  EXPECT_EQ(j.deleted[turn3 + 63], 64);

  // Without a way to read the cached chains the deletion cannot be told from a reordering.
  EXPECT_EQ(StableContextLengths(p.tokens, j.plan, nullptr)[turn3], -1);
  // Nor with a chain the index no longer holds.
  EXPECT_EQ(StableContextLengths(p.tokens, j.plan, [](kv::ChunkId) { return nullptr; })[turn3 + 10],
            -1);
}

// A window that drops two turns at once: one contiguous block.
TEST(StableContextTest, AWindowDroppingTwoTurnsAtOnceKeepsTheRestInOrder) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kTurn1, kTurn2, kTurn3, kTurn4, kTurn5, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn3, kTurn4, kTurn5, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  const int turn3 = p.chunks[1].begin, turn5 = p.chunks[3].begin;
  EXPECT_EQ(j.lengths[turn3], 0);
  EXPECT_EQ(j.lengths[turn5 + 63], 3 * 64 - 1);
  EXPECT_EQ(j.deleted[turn5 + 63], 2 * 64);
  // Two blocks deleted (the first turn and the third) are not one.
  const Prompt q = MakePrompt({kSystem, kTurn2, kTurn4, kTurn5, Range(9500, 10)});
  const Judged k = Judge(cache, q);
  ExpectNoStableContext(k, q.chunks[1].begin, q.chunks[4].begin);
}

// A chunk too short to reuse at a new position is computed anew; the text after it still
// follows it as when cached, compared token by token.
TEST(StableContextTest, AShortTurnComputedAnewKeepsTheHistoryAfterItInPlace) {
  kv::MemoryChunkCache cache(1 << 20);
  const Tokens short_turn = Range(5000, 10);
  CachePath(cache, {kSystem, kTurn1, kTurn2, short_turn, kTurn3, kQuestion});
  const Prompt p = MakePrompt({kSystem, kTurn2, short_turn, kTurn3, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  ASSERT_EQ(KindAt(j, p.chunks[2].begin), TokenKind::kNew);
  EXPECT_EQ(j.lengths[p.chunks[1].begin], 0);
  EXPECT_EQ(j.lengths[p.chunks[3].begin], 64 + 10);
  // A different short turn there is a substitution: nothing of the window is stable.
  const Prompt q = MakePrompt({kSystem, kTurn2, Range(6000, 10), kTurn3, Range(9500, 10)});
  const Judged k = Judge(cache, q);
  ExpectNoStableContext(k, q.chunks[1].begin, q.chunks[2].begin);
  ExpectNoStableContext(k, q.chunks[3].begin, q.chunks[4].begin);
}

// Documents in a new order: the one now after the system prompt lost only the document cached
// before it — a deletion as far as its own context goes — but another document reused at a
// new position follows it: the prompt is pieces put together, not a window that moved.
TEST(StableContextTest, AReorderedDocumentHasNoStableContext) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocument1, kDocument2, kQuestion});
  const Prompt p = MakePrompt({kSystem, kDocument2, kDocument1, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  ExpectNoStableContext(j, p.chunks[1].begin, p.chunks[3].begin);
}

// A document after one that preceded it when cached (another deleted between them), with a
// document in a new order after it: none stable.
TEST(StableContextTest, ADocumentAfterOneThatPrecededItWhenCachedIsNotStable) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocument1, kDocument2, kDocument3, kQuestion});
  const Prompt p = MakePrompt({kSystem, kDocument1, kDocument3, kDocument2, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  ASSERT_EQ(KindAt(j, p.chunks[1].begin), TokenKind::kPrefix);
  ExpectNoStableContext(j, p.chunks[2].begin, p.chunks[4].begin);
}

// [system, Z, H, S] cached, then [system, Y, H, S]: H (short, computed anew) stands where it
// stood, but Y replaced Z before it — a substitution, not a deletion: S is not stable.
TEST(StableContextTest, ASubstitutionBeforeTheHistoryIsNotStable) {
  kv::MemoryChunkCache cache(1 << 20);
  const Tokens z = Range(20000, 40), y = Range(21000, 40), h = Range(22000, 10);
  const Tokens s = Range(23000, 200);
  CachePath(cache, {kSystem, z, h, s, kQuestion});
  const Prompt p = MakePrompt({kSystem, y, h, s, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  ASSERT_EQ(KindAt(j, p.chunks[1].begin), TokenKind::kNew);
  ASSERT_EQ(KindAt(j, p.chunks[2].begin), TokenKind::kNew);
  ExpectNoStableContext(j, p.chunks[3].begin, p.chunks[4].begin);
}

// Text inserted before a cached history: its tokens' context gained tokens.
TEST(StableContextTest, AnInsertionBeforeTheHistoryIsNotStable) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kTurn1, kTurn2, kTurn3, kQuestion});
  const Prompt p = MakePrompt({kSystem, Range(30000, 40), kTurn1, kTurn2, kTurn3, kQuestion});
  const Judged j = Judge(cache, p);
  ExpectNoStableContext(j, p.chunks[2].begin, p.chunks[5].begin);
}

// The dropped turn was part of a chunk (the cached chunks ran across turns): the part of that
// chunk after it is found as a substring and judged on its tokens, as whole chunks are.
TEST(StableContextTest, ATurnDroppedFromInsideAChunkLeavesTheRestStable) {
  kv::MemoryChunkCache cache(1 << 20);
  const Tokens turn2_head(kTurn2.begin(), kTurn2.begin() + 32);
  const Tokens turn2_tail(kTurn2.begin() + 32, kTurn2.end());
  CachePath(cache, {kSystem, Concat({kTurn1, turn2_head}), Concat({turn2_tail, kTurn3}), kTurn4,
                    kQuestion});
  const Prompt p = MakePrompt({kSystem, Concat({kTurn2, kTurn3}), kTurn4, Range(9500, 10)});
  const Judged j = Judge(cache, p);
  const int turn2 = p.chunks[1].begin, turn4 = p.chunks[2].begin;
  ASSERT_EQ(KindAt(j, turn2), TokenKind::kNonPrefix);
  ASSERT_GE(j.plan.num_substring_matches, 1) << j.plan.Summary();
  for (int i = turn2; i < turn4 + 64; ++i) {
    ASSERT_EQ(KindAt(j, i), TokenKind::kNonPrefix) << i;
    EXPECT_EQ(j.lengths[static_cast<size_t>(i)], i - turn2) << i;
    EXPECT_EQ(j.deleted[static_cast<size_t>(i)], 64) << i;
  }
}

// Plain text: the whole conversation one segment, cut into chunks by content. Dropping the
// oldest turn shifts where chunks are cut (short turns share chunks), so the moved history's
// chunks are other chunks than the cached ones; its tokens still count from the cut.
TEST(StableContextTest, ShiftedContentDefinedBoundariesDoNotMatter) {
  const std::vector<int> turn_lengths = {20, 25, 40, 18, 33, 27, 45, 22, 30, 19, 38, 24};
  std::vector<Tokens> turns;
  for (size_t t = 0; t < turn_lengths.size(); ++t) {
    Tokens turn = Range(static_cast<int32_t>(40000 + 1000 * t), turn_lengths[t] - 1);
    turn.push_back(13);  // every turn ends with the same line end
    turns.push_back(turn);
  }
  const auto chunks_of = [](const Tokens& tokens) {
    std::vector<TokenBreak> breaks(tokens.size(), TokenBreak::kNone);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == 13) breaks[i] = TokenBreak::kParagraph;
    }
    std::vector<Tokens> parts;
    int begin = 0;
    for (const int end : ContentDefinedCuts(tokens, breaks, ContentChunkingOptions{})) {
      parts.emplace_back(tokens.begin() + begin, tokens.begin() + end);
      begin = end;
    }
    return parts;
  };
  const Tokens system = Range(1, 39);  // no line end: the cut shows
  Tokens cached_text = system, text = system;
  for (size_t t = 0; t < turns.size(); ++t) {
    if (t < 10) cached_text.insert(cached_text.end(), turns[t].begin(), turns[t].end());
    if (t >= 1) text.insert(text.end(), turns[t].begin(), turns[t].end());
  }
  const std::vector<Tokens> cached_parts = chunks_of(cached_text);
  const std::vector<Tokens> parts = chunks_of(text);
  kv::MemoryChunkCache cache(1 << 20);
  kv::ChunkId parent = kv::kRootChunkId;
  for (const Tokens& part : cached_parts) {
    auto e = testing_plans::Entry(parent, part, /*exact=*/true);
    parent = e->id;
    ASSERT_TRUE(cache.Insert(e).ok());
  }
  const Judged j = Judge(cache, MakePrompt(std::span<const Tokens>(parts)));
  // The boundaries moved: some chunk of the moved history is not a cached chunk.
  int not_cached = 0;
  for (const Tokens& part : parts) {
    not_cached += cache.PeekByContent(kv::HashTokens(testing_plans::kFingerprint, part)) == nullptr;
  }
  EXPECT_GT(not_cached, 1);
  const int cut = static_cast<int>(system.size());
  int reused = 0, stable = 0;
  for (int i = cut; i < static_cast<int>(text.size()); ++i) {
    if (KindAt(j, i) != TokenKind::kNonPrefix) continue;
    ++reused;
    EXPECT_EQ(j.lengths[static_cast<size_t>(i)], i - cut) << i;
    EXPECT_EQ(j.deleted[static_cast<size_t>(i)], turn_lengths[0]) << i;
    stable += j.lengths[static_cast<size_t>(i)] >= 128;
  }
  EXPECT_GT(reused, 200) << j.plan.Summary();
  EXPECT_GT(stable, 100);
}

}  // namespace
}  // namespace reprise::reuse
