#include "kv/memory_chunk_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <thread>
#include <vector>

namespace reprise::kv {
namespace {

constexpr uint64_t kFingerprint = 7;

// A chunk of `tokens` under `parent`, with KV of one layer, one head of dim 4.
std::shared_ptr<ChunkEntry> MakeEntry(ChunkId parent, std::vector<int32_t> tokens,
                                      bool exact = true) {
  auto e = std::make_shared<ChunkEntry>();
  e->parent = parent;
  e->content = HashTokens(kFingerprint, tokens);
  e->id = ChainId(parent, e->content);
  e->exact = exact;
  e->tokens = std::move(tokens);
  auto kv = std::make_shared<ChunkKv>();
  kv->num_layers = 1;
  kv->num_kv_heads = 1;
  kv->head_dim = 4;
  kv->num_tokens = static_cast<int>(e->tokens.size());
  kv->Allocate();
  e->kv = std::move(kv);
  return e;
}

std::vector<int32_t> Range(int32_t first, int count) {
  std::vector<int32_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(MemoryChunkCacheTest, FindsByIdContentAndParent) {
  MemoryChunkCache cache(1 << 20);
  auto a = MakeEntry(kRootChunkId, Range(10, 8));
  auto b = MakeEntry(a->id, Range(100, 8));
  ASSERT_TRUE(cache.Insert(a).ok());
  ASSERT_TRUE(cache.Insert(b).ok());

  EXPECT_EQ(cache.Find(a->id), a);
  EXPECT_EQ(cache.Find(b->id), b);
  EXPECT_EQ(cache.Find(12345), nullptr);
  EXPECT_EQ(cache.FindByContent(b->content), b);
  EXPECT_EQ(cache.FindByContent(HashTokens(kFingerprint, Range(0, 3))), nullptr);

  const auto roots = cache.Children(kRootChunkId);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], a);
  const auto under_a = cache.Children(a->id);
  ASSERT_EQ(under_a.size(), 1u);
  EXPECT_EQ(under_a[0], b);
  EXPECT_TRUE(cache.Children(b->id).empty());

  const ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.num_chunks, 2);
  EXPECT_EQ(s.inserts, 2);
  EXPECT_EQ(s.bytes, static_cast<int64_t>(a->bytes() + b->bytes()));
  EXPECT_EQ(s.hits, 3);  // two Finds by id, one by content
}

TEST(MemoryChunkCacheTest, EvictsLeastRecentlyUsedToStayWithinBudget) {
  auto a = MakeEntry(kRootChunkId, Range(0, 16));
  auto b = MakeEntry(kRootChunkId, Range(100, 16));
  auto c = MakeEntry(kRootChunkId, Range(200, 16));
  // Room for two entries of this size, not three.
  const int64_t budget = static_cast<int64_t>(2 * a->bytes() + a->bytes() / 2);
  MemoryChunkCache cache(budget);
  ASSERT_TRUE(cache.Insert(a).ok());
  ASSERT_TRUE(cache.Insert(b).ok());
  ASSERT_NE(cache.Find(a->id), nullptr);  // a is now more recent than b
  ASSERT_TRUE(cache.Insert(c).ok());

  EXPECT_NE(cache.Find(a->id), nullptr);
  EXPECT_EQ(cache.Find(b->id), nullptr);
  EXPECT_NE(cache.Find(c->id), nullptr);
  const ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.num_chunks, 2);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_LE(s.bytes, budget);
  // The evicted entry is gone from every index, not only from the id map.
  EXPECT_EQ(cache.FindByContent(b->content), nullptr);
  for (const auto& child : cache.Children(kRootChunkId)) EXPECT_NE(child->id, b->id);
  for (const ChunkCandidate& cand : cache.FindCandidates(b->tokens, "", 8)) {
    EXPECT_NE(cand.id, b->id);
  }
}

TEST(MemoryChunkCacheTest, ACallerKeepsAnEvictedEntryAlive) {
  auto a = MakeEntry(kRootChunkId, Range(0, 16));
  MemoryChunkCache cache(static_cast<int64_t>(a->bytes() + a->bytes() / 2));
  ASSERT_TRUE(cache.Insert(a).ok());
  std::shared_ptr<const ChunkEntry> held = cache.Find(a->id);
  ASSERT_TRUE(cache.Insert(MakeEntry(kRootChunkId, Range(500, 16))).ok());
  EXPECT_EQ(cache.Find(a->id), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->kv->num_tokens, 16);  // still valid after the eviction
}

TEST(MemoryChunkCacheTest, ReplacingAnEntryKeepsTheAccountingRight) {
  MemoryChunkCache cache(1 << 20);
  auto a = MakeEntry(kRootChunkId, Range(0, 16), /*exact=*/false);
  ASSERT_TRUE(cache.Insert(a).ok());
  auto again = MakeEntry(kRootChunkId, Range(0, 16));  // exact KV replaces approximate KV
  ASSERT_EQ(again->id, a->id);
  ASSERT_TRUE(cache.Insert(again).ok());
  const ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.num_chunks, 1);
  EXPECT_EQ(s.bytes, static_cast<int64_t>(again->bytes()));
  EXPECT_EQ(cache.Find(a->id), again);
  EXPECT_EQ(cache.Children(kRootChunkId).size(), 1u);
  EXPECT_EQ(cache.FindCandidates(a->tokens, "", 8).size(), 1u);
}

// An exact entry is never replaced: not by approximate KV of the same chunk, nor by another
// copy of the exact KV — also when sessions on several threads insert at once.
TEST(MemoryChunkCacheTest, AnExactEntryIsNeverReplaced) {
  MemoryChunkCache cache(1 << 20);
  auto exact = MakeEntry(kRootChunkId, Range(0, 16));
  ASSERT_TRUE(cache.Insert(exact).ok());
  ASSERT_TRUE(cache.Insert(MakeEntry(kRootChunkId, Range(0, 16), /*exact=*/false)).ok());
  EXPECT_EQ(cache.Peek(exact->id), exact);
  ASSERT_TRUE(cache.Insert(MakeEntry(kRootChunkId, Range(0, 16))).ok());
  EXPECT_EQ(cache.Peek(exact->id), exact);
  EXPECT_EQ(cache.stats().num_chunks, 1);

  for (int round = 0; round < 20; ++round) {
    MemoryChunkCache shared(1 << 20);
    auto winner = MakeEntry(kRootChunkId, Range(1000, 16));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          EXPECT_TRUE(shared
                          .Insert(t == 0 && i == 0
                                      ? winner
                                      : MakeEntry(kRootChunkId, Range(1000, 16), false))
                          .ok());
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(shared.Peek(winner->id), winner) << "round " << round;
  }
}

TEST(MemoryChunkCacheTest, RejectsAnEntryLargerThanTheBudget) {
  auto a = MakeEntry(kRootChunkId, Range(0, 64));
  MemoryChunkCache cache(static_cast<int64_t>(a->bytes()) - 1);
  const Status s = cache.Insert(a);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.stats().num_chunks, 0);
  EXPECT_EQ(cache.stats().bytes, 0);
}

TEST(MemoryChunkCacheTest, ContentLookupPrefersExactEntries) {
  MemoryChunkCache cache(1 << 20);
  const std::vector<int32_t> doc = Range(300, 12);
  // The same document cached twice: once after another chunk (approximate KV there, as a
  // reused chunk is), once as the first chunk of a prompt (exact).
  auto first = MakeEntry(kRootChunkId, Range(0, 4));
  auto inexact = MakeEntry(first->id, doc, /*exact=*/false);
  auto exact = MakeEntry(kRootChunkId, doc, /*exact=*/true);
  ASSERT_NE(inexact->id, exact->id);
  ASSERT_EQ(inexact->content, exact->content);
  ASSERT_TRUE(cache.Insert(inexact).ok());
  ASSERT_TRUE(cache.Insert(exact).ok());
  EXPECT_EQ(cache.FindByContent(exact->content), exact);
}

TEST(MemoryChunkCacheTest, CandidatesAreChunksSharingASpan) {
  MemoryChunkCache cache(1 << 22);
  // Twenty unrelated chunks, and one that shares a 40-token span with the query.
  std::vector<std::shared_ptr<ChunkEntry>> entries;
  for (int i = 0; i < 20; ++i) {
    entries.push_back(MakeEntry(kRootChunkId, Range(1000 + 100 * i, 64)));
    ASSERT_TRUE(cache.Insert(entries.back()).ok());
  }
  std::vector<int32_t> holder = Range(50000, 20);
  const std::vector<int32_t> span = Range(60000, 40);
  holder.insert(holder.end(), span.begin(), span.end());
  auto target = MakeEntry(kRootChunkId, holder);
  ASSERT_TRUE(cache.Insert(target).ok());

  std::vector<int32_t> query = Range(70000, 10);
  query.insert(query.end(), span.begin(), span.end());
  const auto candidates = cache.FindCandidates(query, "", 4);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates[0].id, target->id);
  EXPECT_GT(candidates[0].score, 0.0);
  EXPECT_EQ(candidates[0].entry, target);  // the entry comes along (with its KV here)
  EXPECT_TRUE(cache.FindCandidates(Range(90000, 30), "", 4).empty());
}

// Contains answers from the index: it counts no hit and leaves the LRU order alone.
TEST(MemoryChunkCacheTest, ContainsIsNotAUse) {
  auto a = MakeEntry(kRootChunkId, Range(10, 8));
  auto b = MakeEntry(kRootChunkId, Range(20, 8), /*exact=*/false);
  MemoryChunkCache cache(a->bytes() + b->bytes());
  ASSERT_TRUE(cache.Insert(a).ok());
  ASSERT_TRUE(cache.Insert(b).ok());
  EXPECT_TRUE(cache.Contains(a->id, /*require_exact=*/true));
  EXPECT_TRUE(cache.Contains(b->id, /*require_exact=*/false));
  EXPECT_FALSE(cache.Contains(b->id, /*require_exact=*/true));
  EXPECT_FALSE(cache.Contains(12345, false));
  EXPECT_EQ(cache.stats().hits, 0);
  // `a` is still the least recently used: a third entry evicts it, not `b`.
  auto c = MakeEntry(kRootChunkId, Range(30, 8));
  ASSERT_TRUE(cache.Insert(c).ok());
  EXPECT_FALSE(cache.Contains(a->id, false));
  EXPECT_TRUE(cache.Contains(b->id, false));
}

}  // namespace
}  // namespace reprise::kv
