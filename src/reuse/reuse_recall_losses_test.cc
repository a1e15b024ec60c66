#include "reuse/reuse_recall_losses.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/memory_chunk_cache.h"
#include "reuse/planner_test_util.h"
#include "reuse/reuse_recall_oracle.h"
#include "reuse/token_test_util.h"

namespace reprise::reuse {
namespace {

using testing_plans::CachePath;
using testing_plans::MakePrompt;
using testing_plans::Prompt;
using testing_tokens::Concat;
using testing_tokens::Range;
using testing_tokens::Tokens;

const Tokens kDoc = Range(1000, 64);
const Tokens kQuestion = Range(9000, 10);

// Labels: NEW everywhere except [begin, end), NONPREFIX there.
std::vector<TokenKind> Kinds(size_t n, int begin = 0, int end = 0) {
  std::vector<TokenKind> kinds(n, TokenKind::kNew);
  for (int i = begin; i < end; ++i) kinds[static_cast<size_t>(i)] = TokenKind::kNonPrefix;
  return kinds;
}

// Reusable: [begin, end).
std::vector<uint8_t> Mask(size_t n, int begin, int end) {
  std::vector<uint8_t> mask(n, 0);
  for (int i = begin; i < end; ++i) mask[static_cast<size_t>(i)] = 1;
  return mask;
}

RecallLosses Classify(const Prompt& p, const std::vector<TokenKind>& kinds,
                      const std::vector<uint8_t>& mask, kv::ChunkCache& cache, int window = 32,
                      int max_candidates = 32) {
  auto losses =
      ClassifyRecallLosses({p.tokens, kinds, p.chunks, mask, window, max_candidates}, cache);
  EXPECT_TRUE(losses.ok()) << losses.error().ToString();
  return losses.ok() ? *losses : RecallLosses{};
}

TEST(RecallLossesTest, NothingIsLostWhenEveryReusableTokenWasReused) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const RecallLosses l =
      Classify(p, Kinds(p.tokens.size(), 0, 64), Mask(p.tokens.size(), 0, 64), cache);
  EXPECT_EQ(l.total(), 0);
  EXPECT_EQ(DescribeRecallLosses(l), "none");
}

TEST(RecallLossesTest, AWindowNoCachedChunkHoldsIsNotCached) {
  kv::MemoryChunkCache cache(1 << 20);  // evicted, say: the oracle saw it, the cache has not
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const RecallLosses l = Classify(p, Kinds(p.tokens.size()), Mask(p.tokens.size(), 0, 64), cache);
  EXPECT_EQ(l.not_cached, 64);
  EXPECT_EQ(l.total(), 64);
}

TEST(RecallLossesTest, TheLastTokenIsAlwaysRun) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  const Prompt p = MakePrompt({kDoc});
  const RecallLosses l = Classify(p, Kinds(64, 0, 63), Mask(64, 0, 64), cache);
  EXPECT_EQ(l.last_token, 1);
  EXPECT_EQ(l.total(), 1);
}

TEST(RecallLossesTest, ACandidateThePlannerWasGivenButDidNotUseIsTheMatchers) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const RecallLosses l = Classify(p, Kinds(p.tokens.size()), Mask(p.tokens.size(), 0, 64), cache);
  EXPECT_EQ(l.matcher, 64);
  EXPECT_EQ(l.total(), 64);
}

TEST(RecallLossesTest, ACandidateRankedPastTheCapIsCapped) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const RecallLosses l = Classify(p, Kinds(p.tokens.size()), Mask(p.tokens.size(), 0, 64), cache,
                                  /*window=*/32, /*max_candidates=*/0);
  EXPECT_EQ(l.candidates_capped, 64);
  EXPECT_EQ(l.total(), 64);
}

TEST(RecallLossesTest, AWindowAcrossTwoPromptChunksIsSplit) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  // The cached document arrives cut in two prompt chunks of 32, each shorter than a window
  // of 40: only windows across the cut hold it.
  const Prompt p = MakePrompt({Range(1000, 32), Range(1032, 32), kQuestion});
  const RecallLosses l = Classify(p, Kinds(p.tokens.size()), Mask(p.tokens.size(), 0, 64), cache,
                                  /*window=*/40);
  EXPECT_EQ(l.prompt_chunk_split, 64);
  EXPECT_EQ(l.total(), 64);
}

TEST(RecallLossesTest, TheShortRestNextToAMatchIsASeam) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  // 50 tokens were matched (from wherever); the 14 after them are covered by the cached
  // window [32, 64) only together with matched ones.
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const RecallLosses l =
      Classify(p, Kinds(p.tokens.size(), 0, 50), Mask(p.tokens.size(), 0, 64), cache);
  EXPECT_EQ(l.seam, 14);
  EXPECT_EQ(l.total(), 14);
  EXPECT_EQ(DescribeRecallLosses(l), "seam 14");
}

TEST(RecallLossesTest, CausesAddUpOverAPromptAndAcrossPrompts) {
  kv::MemoryChunkCache cache(1 << 20);
  CachePath(cache, {kDoc});
  // The oracle has seen the document and another passage that was never cached.
  ReuseRecallOracle oracle(32);
  const Tokens other = Range(4000, 40);
  oracle.Add(Concat({kDoc, other}));
  const Prompt p = MakePrompt({other, kDoc, kQuestion});
  const std::vector<uint8_t> mask = oracle.ReusableMask(p.tokens);
  // Windows across the seam other|kDoc were never seen; each part is reusable on its own.
  EXPECT_EQ(oracle.CountReusable(p.tokens), 40 + 64);
  RecallLosses sum;
  sum += Classify(p, Kinds(p.tokens.size(), 40, 104), mask, cache);
  EXPECT_EQ(sum.not_cached, 40);
  sum += Classify(p, Kinds(p.tokens.size()), mask, cache);
  EXPECT_EQ(sum.not_cached, 80);
  EXPECT_EQ(sum.matcher, 64);
  EXPECT_EQ(DescribeRecallLosses(sum), "not cached 80, matcher 64");
}

TEST(RecallLossesTest, AWindowSeenOnlyAcrossTwoCachedChunksIsSplitThere) {
  kv::MemoryChunkCache cache(1 << 20);
  // An earlier prompt held the document cut in two chunks at token 20: its windows around the
  // cut were seen, but no cached chunk holds them.
  CachePath(cache, {Range(1000, 20), Range(1020, 44)});
  ReuseRecallOracle seen(32), seen_in_chunks(32);
  seen.Add(kDoc);
  seen_in_chunks.Add(Range(1000, 20));
  seen_in_chunks.Add(Range(1020, 44));
  const Prompt p = MakePrompt({kDoc, kQuestion});
  const std::vector<uint8_t> mask = seen.ReusableMask(p.tokens);
  const std::vector<uint8_t> within = seen_in_chunks.ReusableMask(p.tokens);
  // Tokens 20..63 were reused from the second chunk; 0..19 only ever lay in windows across
  // the cut.
  const std::vector<TokenKind> kinds = Kinds(p.tokens.size(), 20, 64);
  auto losses = ClassifyRecallLosses({p.tokens, kinds, p.chunks, mask, 32, 32, within}, cache);
  ASSERT_TRUE(losses.ok());
  EXPECT_EQ(losses->cached_chunk_split, 20);
  EXPECT_EQ(losses->total(), 20);
  // Not knowing how earlier prompts were cut, the same tokens are "not cached".
  EXPECT_EQ(Classify(p, kinds, mask, cache).not_cached, 20);
}

TEST(RecallLossesTest, MismatchedInputsAreRejected) {
  kv::MemoryChunkCache cache(1 << 20);
  const Prompt p = MakePrompt({kDoc});
  const std::vector<TokenKind> kinds = Kinds(64);
  const std::vector<uint8_t> short_mask(10, 1);
  EXPECT_FALSE(ClassifyRecallLosses({p.tokens, kinds, p.chunks, short_mask, 32, 32}, cache).ok());
  const std::vector<uint8_t> mask(64, 1);
  EXPECT_FALSE(ClassifyRecallLosses({p.tokens, kinds, p.chunks, mask, 0, 32}, cache).ok());
  const std::vector<PromptChunk> gap = {PromptChunk{0, 30, 0}};
  EXPECT_FALSE(ClassifyRecallLosses({p.tokens, kinds, gap, mask, 32, 32}, cache).ok());
  EXPECT_FALSE(
      ClassifyRecallLosses({p.tokens, kinds, p.chunks, mask, 32, 32, short_mask}, cache).ok());
}

}  // namespace
}  // namespace reprise::reuse
