#include "reuse/reuse_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "base/random.h"
#include "kv/memory_chunk_cache.h"
#include "reuse/planner_test_util.h"
#include "reuse/reuse_recall_oracle.h"
#include "reuse/token_test_util.h"

namespace reprise::reuse {
namespace {

using testing_plans::CachePath;
using testing_plans::Entry;
using testing_plans::kFingerprint;
using testing_plans::MakePrompt;
using testing_plans::Prompt;
using testing_tokens::Concat;
using testing_tokens::Range;
using testing_tokens::Tokens;

int Count(const ReusePlan& plan, TokenKind kind, int begin, int end) {
  int n = 0;
  for (int i = begin; i < end; ++i) n += plan.tokens[static_cast<size_t>(i)].kind == kind;
  return n;
}

const Tokens kSystem = Range(1, 40);
const Tokens kDocA = Range(1000, 64);
const Tokens kDocB = Range(2000, 64);
const Tokens kQuestion = Range(9000, 10);

TEST(ReusePlannerTest, AnEmptyCacheLeavesEveryTokenNew) {
  kv::MemoryChunkCache cache(1 << 20);
  const Prompt p = MakePrompt({kSystem, kDocA, kQuestion});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  EXPECT_EQ(plan->num_new, static_cast<int>(p.tokens.size()));
  EXPECT_EQ(plan->num_prefix + plan->num_nonprefix, 0);
  ASSERT_EQ(plan->chunk_ids.size(), 3u);
  // Chained ids: a chunk's node depends on everything before it.
  EXPECT_EQ(plan->chunk_ids[0], kv::ChainId(kv::kRootChunkId, p.chunks[0].content));
  EXPECT_EQ(plan->chunk_ids[1], kv::ChainId(plan->chunk_ids[0], p.chunks[1].content));
}

TEST(ReusePlannerTest, TheCachedPathIsPrefixAndAMovedDocumentIsNonPrefix) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocA, kDocB, kQuestion});
  // Same system prompt, the documents swapped, a new question.
  const Tokens question2 = Range(9500, 10);
  const Prompt p = MakePrompt({kSystem, kDocB, kDocA, question2});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  const int sys_end = p.chunks[0].end;
  const int docs_end = p.chunks[2].end;
  EXPECT_EQ(Count(*plan, TokenKind::kPrefix, 0, sys_end), sys_end);
  EXPECT_EQ(Count(*plan, TokenKind::kNonPrefix, sys_end, docs_end), docs_end - sys_end);
  EXPECT_EQ(Count(*plan, TokenKind::kNew, docs_end, static_cast<int>(p.tokens.size())),
            static_cast<int>(question2.size()));
  EXPECT_EQ(plan->num_whole_chunk_matches, 2);
  // Each reused token names its source chunk and its index there.
  for (int i = sys_end; i < docs_end; ++i) {
    const TokenSource& t = plan->tokens[static_cast<size_t>(i)];
    ASSERT_GE(t.source, 0);
    const kv::ChunkEntry& src = *plan->sources[static_cast<size_t>(t.source)];
    EXPECT_EQ(src.tokens[static_cast<size_t>(t.source_token)], p.tokens[static_cast<size_t>(i)]);
  }
}

// A chunk whose text recurs in several chains (the same reply in two conversations) is taken
// from the chain that continues the chunk now before it, not from whichever is most recent.
TEST(ReusePlannerTest, ARecurringChunkIsTakenFromTheChainThatContinuesItsPredecessor) {
  kv::MemoryChunkCache cache(1 << 20);
  const Tokens reply = Range(7000, 40);
  CachePath(cache, {kSystem, kDocA, reply, kQuestion});
  CachePath(cache, {Range(5000, 20), kDocB, reply});  // most recent copy of `reply`
  const Prompt p = MakePrompt({Range(6000, 12), kDocA, reply, Range(9500, 10)});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  const TokenSource& doc = plan->tokens[static_cast<size_t>(p.chunks[1].begin)];
  const TokenSource& rep = plan->tokens[static_cast<size_t>(p.chunks[2].begin)];
  ASSERT_EQ(doc.kind, TokenKind::kNonPrefix);
  ASSERT_EQ(rep.kind, TokenKind::kNonPrefix);
  EXPECT_EQ(plan->sources[static_cast<size_t>(rep.source)]->parent,
            plan->sources[static_cast<size_t>(doc.source)]->id);
}

TEST(ReusePlannerTest, PrefixContinuesInsideTheFirstChunkThatMisses) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocA});
  // The second chunk starts like kDocA for 20 tokens, then differs.
  const Tokens edited = Concat({Tokens(kDocA.begin(), kDocA.begin() + 20), Range(5000, 44)});
  const Prompt p = MakePrompt({kSystem, edited, kQuestion});
  PlannerOptions options;
  options.use_nonprefix = false;
  auto plan = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, static_cast<int>(kSystem.size()) + 20);
  EXPECT_EQ(plan->tokens[kSystem.size() + 20].kind, TokenKind::kNew);
}

TEST(ReusePlannerTest, InexactEntriesAreNeverPrefixByDefault) {
  kv::MemoryChunkCache cache(1 << 20);
  ASSERT_TRUE(cache.Insert(Entry(kv::kRootChunkId, kSystem, /*exact=*/false)).ok());
  const Prompt p = MakePrompt({kSystem, kQuestion});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, 0);
  EXPECT_EQ(plan->num_prefix_inexact, 0);
  EXPECT_EQ(plan->first_inexact_prefix_token, -1);
  // Still usable at its (same) position as a non-prefix chunk.
  EXPECT_EQ(plan->num_nonprefix, static_cast<int>(kSystem.size()));
}

// A chat's next turn: the previous prompt (system, a blended document, the last turn) is this
// prompt's start. With use_inexact_prefix the whole path is prefix, marked inexact from the
// first blended chunk on; the walk still stops where the path differs.
TEST(ReusePlannerTest, InexactPrefixContinuesAPathAnEarlierRequestBlended) {
  kv::MemoryChunkCache cache(1 << 20);
  auto system = Entry(kv::kRootChunkId, kSystem, /*exact=*/true);
  auto doc = Entry(system->id, kDocA, /*exact=*/false);
  auto turn = Entry(doc->id, kQuestion, /*exact=*/false);
  for (const auto& e : {system, doc, turn}) ASSERT_TRUE(cache.Insert(e).ok());
  const Tokens next_turn = Range(9500, 10);
  const Prompt p = MakePrompt({kSystem, kDocA, kQuestion, next_turn});
  PlannerOptions options;
  options.use_inexact_prefix = true;
  auto plan = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  const int path_end = p.chunks[2].end;
  EXPECT_EQ(Count(*plan, TokenKind::kPrefix, 0, path_end), path_end);
  EXPECT_EQ(plan->first_inexact_prefix_token, p.chunks[1].begin);
  EXPECT_EQ(plan->num_prefix_inexact, path_end - p.chunks[1].begin);
  EXPECT_EQ(plan->num_nonprefix, 0);
  EXPECT_EQ(plan->num_new, static_cast<int>(next_turn.size()));
  EXPECT_NE(plan->Summary().find("inexact"), std::string::npos) << plan->Summary();

  // A prompt with the blended document after another system prompt is not on that path: the
  // document is non-prefix there.
  const Prompt other = MakePrompt({Range(300, 40), kDocA, next_turn});
  plan = PlanReuse(other.tokens, other.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, 0);
  EXPECT_EQ(plan->num_nonprefix, static_cast<int>(kDocA.size()));

  // Inside the first chunk that misses, an inexact child gives its common token prefix.
  const Tokens edited = Concat({Tokens(kDocA.begin(), kDocA.begin() + 20), Range(5000, 44)});
  const Prompt partial = MakePrompt({kSystem, edited});
  options.use_nonprefix = false;
  plan = PlanReuse(partial.tokens, partial.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, static_cast<int>(kSystem.size()) + 20);
  EXPECT_EQ(plan->num_prefix_inexact, 20);
}

TEST(ReusePlannerTest, HashCollisionsAreCaughtByComparingTokens) {
  kv::MemoryChunkCache cache(1 << 20);
  // An entry claiming kDocA's content hash but holding other tokens.
  auto liar = Entry(kv::kRootChunkId, kDocB, /*exact=*/true);
  liar->content = kv::HashTokens(kFingerprint, kDocA);
  liar->id = kv::ChainId(kv::kRootChunkId, liar->content);
  ASSERT_TRUE(cache.Insert(liar).ok());
  const Prompt p = MakePrompt({kDocA, kQuestion});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, 0);
  EXPECT_EQ(plan->num_nonprefix, 0);
}

TEST(ReusePlannerTest, SubChunkSpansAreFoundAboveTheMinimumLength) {
  kv::MemoryChunkCache cache(1 << 22);
  // Filler chunks, so that the candidate index has something to rank against.
  for (int i = 0; i < 10; ++i) CachePath(cache, {Range(20000 + 100 * i, 64)});
  // One cached chunk holds both spans. (The candidate index promises to find a chunk that
  // shares kv::kGuaranteedSpanTokens tokens; a chunk sharing only a shorter span is found by
  // chance. Here the long span brings the chunk, and the matcher then finds the short one.)
  const Tokens span = Range(40000, 48);
  const Tokens short_span = Range(41000, 20);
  CachePath(cache, {Concat({Range(30000, 16), span, Range(31000, 16), short_span})});

  // The prompt's document holds the long span between new text, and the short one.
  const Prompt p = MakePrompt(
      {kSystem, Concat({Range(50000, 8), span, Range(51000, 8), short_span}), kQuestion});
  PlannerOptions options;
  options.min_match_tokens = 32;
  auto plan = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  const int span_begin = p.chunks[1].begin + 8;
  EXPECT_EQ(Count(*plan, TokenKind::kNonPrefix, span_begin, span_begin + 48), 48);
  EXPECT_EQ(plan->num_nonprefix, 48);  // the 20-token span is below the minimum
  EXPECT_EQ(plan->num_substring_matches, 1);
  const TokenSource& first = plan->tokens[static_cast<size_t>(span_begin)];
  EXPECT_EQ(first.source_token, 16);  // where the span sits in the cached chunk

  options.min_match_tokens = 16;
  auto finer = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(finer.ok());
  EXPECT_EQ(finer->num_nonprefix, 48 + 20);
  EXPECT_EQ(finer->num_substring_matches, 2);

  options.use_substrings = false;
  auto none = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->num_nonprefix, 0);
}

// A chunk shorter than min_whole_chunk_tokens (a question's closing line and turn marker,
// the same in every prompt) is not reused at a new position: its KV was computed after
// another prompt's text, right where the next token is decided. A long one is.
TEST(ReusePlannerTest, ShortChunksAreNotReusedAtANewPosition) {
  kv::MemoryChunkCache cache(1 << 22);
  const Tokens marker = Range(7000, 6), long_doc = Range(8000, 40);
  CachePath(cache, {kSystem, kDocA, marker});
  CachePath(cache, {kSystem, long_doc});
  const Prompt p = MakePrompt({kSystem, long_doc, kDocB, marker, kQuestion});
  PlannerOptions options;
  auto plan = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, 40 + 40);  // the system prompt and long_doc, on their path
  EXPECT_EQ(Count(*plan, TokenKind::kNew, p.chunks[3].begin, p.chunks[3].end), 6);
  EXPECT_EQ(plan->num_nonprefix, 0) << plan->Summary();

  options.min_whole_chunk_tokens = 1;
  plan = PlanReuse(p.tokens, p.chunks, cache, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Count(*plan, TokenKind::kNonPrefix, p.chunks[3].begin, p.chunks[3].end), 6);
}

TEST(ReusePlannerTest, TheLastTokenIsAlwaysNew) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocA});
  const Prompt p = MakePrompt({kSystem, kDocA});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_prefix, static_cast<int>(p.tokens.size()) - 1);
  EXPECT_EQ(plan->tokens.back().kind, TokenKind::kNew);
  const auto runs = plan->Runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].kind, RunKind::kPrefix);
  EXPECT_EQ(runs[1].kind, RunKind::kNew);
  EXPECT_EQ(runs[1].end - runs[1].begin, 1);
}

// Reused tokens from two cached chunks in a row are two runs (the naive schedule gives each
// its own calls); the scheduler merges them by kind.
TEST(ReusePlannerTest, RunsEndWhereTheReusedSourceChanges) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDocA});
  CachePath(cache, {kDocB});
  const Prompt p = MakePrompt({kSystem, kDocB, kDocA, kQuestion});
  auto plan = PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->num_nonprefix, static_cast<int>(kDocA.size() + kDocB.size())) << plan->Summary();
  const std::vector<TokenRun> runs = plan->Runs();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].kind, RunKind::kNew);
  EXPECT_EQ(runs[1].kind, RunKind::kNonPrefix);
  EXPECT_EQ(runs[1].end - runs[1].begin, static_cast<int>(kDocB.size()));
  EXPECT_EQ(runs[2].kind, RunKind::kNonPrefix);
  EXPECT_EQ(runs[2].begin, runs[1].end);
  EXPECT_EQ(runs[2].end - runs[2].begin, static_cast<int>(kDocA.size()));
  EXPECT_EQ(runs[3].kind, RunKind::kNew);
}

TEST(ReusePlannerTest, MethodSwitchesTurnReuseKindsOff) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kSystem, kDocA, kDocB});
  const Prompt p = MakePrompt({kSystem, kDocB, kQuestion});
  PlannerOptions prefix_only;
  prefix_only.use_nonprefix = false;
  auto a = PlanReuse(p.tokens, p.chunks, cache, prefix_only);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->num_prefix, static_cast<int>(kSystem.size()));
  EXPECT_EQ(a->num_nonprefix, 0);

  PlannerOptions nothing;
  nothing.use_prefix = false;
  nothing.use_nonprefix = false;
  auto b = PlanReuse(p.tokens, p.chunks, cache, nothing);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->num_new, static_cast<int>(p.tokens.size()));
}

TEST(ReusePlannerTest, RejectsChunksThatDoNotTileThePrompt) {
  kv::MemoryChunkCache cache(1 << 20);
  Prompt p = MakePrompt({kSystem, kDocA});
  p.chunks[1].begin += 1;  // a gap
  EXPECT_FALSE(PlanReuse(p.tokens, p.chunks, cache, PlannerOptions{}).ok());
  Prompt q = MakePrompt({kSystem, kDocA});
  q.tokens.push_back(5);  // uncovered tail
  EXPECT_FALSE(PlanReuse(q.tokens, q.chunks, cache, PlannerOptions{}).ok());
}

// Issue 17's trace in tokens: every request pastes 6 of the same 12 passages, in a new order,
// into one plain segment after the system prompt, cut into fixed 512-token chunks (as
// engine::ReuseSession cuts a segment); each request's chunks are cached after it. Passages
// are seen only inside earlier prompts, cut anywhere. Recall over the run, against the
// oracle of reuse_recall_oracle.h, must be at least 95%.
TEST(ReusePlannerTest, ShuffledPlainPassagesAreFoundWithRecallOfAtLeast95Percent) {
  Random random(2026);
  const auto random_tokens = [&](size_t n) {
    Tokens t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(random.NextBelow(30000));
    return t;
  };
  std::vector<Tokens> passages;
  for (int i = 0; i < 12; ++i) passages.push_back(random_tokens(150 + random.NextBelow(250)));
  const Tokens system = random_tokens(40);
  kv::MemoryChunkCache cache(int64_t{1} << 30);
  ReuseRecallOracle oracle(32);
  PlannerOptions options;
  options.use_inexact_prefix = true;
  int64_t reusable = 0, found = 0;
  for (int request = 0; request < 10; ++request) {
    std::vector<size_t> order(passages.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    Tokens pasted;
    for (size_t i = 0; i < 6; ++i) {
      std::swap(order[i], order[i + random.NextBelow(order.size() - i)]);
      pasted.insert(pasted.end(), passages[order[i]].begin(), passages[order[i]].end());
    }
    const Tokens question = random_tokens(20);
    pasted.insert(pasted.end(), question.begin(), question.end());
    std::vector<Tokens> parts = {system};
    for (size_t b = 0; b < pasted.size(); b += 512) {
      parts.emplace_back(pasted.begin() + static_cast<ptrdiff_t>(b),
                         pasted.begin() + static_cast<ptrdiff_t>(std::min(pasted.size(), b + 512)));
    }
    const Prompt p = MakePrompt(parts);
    auto plan = PlanReuse(p.tokens, p.chunks, cache, options);
    ASSERT_TRUE(plan.ok());
    if (request > 0) {
      // Found: reused tokens the oracle calls reusable (a reused token it does not would be
      // a false match, not recall), each from a source token of the same id.
      const std::vector<uint8_t> mask = oracle.ReusableMask(p.tokens);
      for (size_t i = 0; i < p.tokens.size(); ++i) {
        const TokenSource& t = plan->tokens[i];
        if (t.kind == TokenKind::kNew) continue;
        const kv::ChunkEntry& source = *plan->sources[static_cast<size_t>(t.source)];
        ASSERT_EQ(source.tokens[static_cast<size_t>(t.source_token)], p.tokens[i])
            << "request " << request << ", token " << i;
        if (mask[i]) ++found;
      }
      reusable += std::count(mask.begin(), mask.end(), uint8_t{1});
    }
    oracle.Add(p.tokens);
    kv::ChunkId parent = kv::kRootChunkId;
    for (const Tokens& part : parts) {
      auto e = Entry(parent, part, /*exact=*/true);
      parent = e->id;
      if (!cache.Contains(e->id, false)) {
        ASSERT_TRUE(cache.Insert(e).ok());
      }
    }
  }
  ASSERT_GT(reusable, 5000);
  EXPECT_GE(static_cast<double>(found), 0.95 * static_cast<double>(reusable))
      << found << " of " << reusable << " reusable tokens found";
}

}  // namespace
}  // namespace reprise::reuse
