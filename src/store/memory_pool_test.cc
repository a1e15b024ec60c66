#include "store/memory_pool.h"

#include <gtest/gtest.h>

#include "store/store_test_util.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x1234;

std::shared_ptr<const kv::ChunkEntry> Chunk(uint64_t seed, kv::ChunkId parent = 0,
                                            std::string text = "") {
  return std::make_shared<const kv::ChunkEntry>(
      MakeTestChunk(seed, TestShape{}, kFingerprint, parent, std::move(text)));
}

MemoryPool Pool(int64_t budget_bytes = int64_t{1} << 30) {
  return MemoryPool(budget_bytes, std::make_unique<LruEvictionPolicy>());
}

TEST(MemoryPoolTest, IndexesByIdContentAndParentPerNamespace) {
  MemoryPool pool = Pool();
  auto a = Chunk(2), b = Chunk(4, a->id), c = Chunk(6, a->id);
  pool.Add("app", a, false, true, 1.0);
  pool.Add("app", b, false, true, 1.0);
  pool.Add("app", c, false, true, 1.0);
  pool.Add("other", b, false, true, 1.0);
  ASSERT_NE(pool.Find("app", a->id), nullptr);
  EXPECT_EQ(pool.Find("app", a->id)->entry, a);
  EXPECT_EQ(pool.Find("other", a->id), nullptr);
  EXPECT_EQ(pool.Use("app", c->id, 2.0), c);
  EXPECT_EQ(pool.UseByContent("app", b->content, 2.0), b);
  EXPECT_EQ(pool.UseByContent("other", c->content, 2.0), nullptr);
  auto children = pool.Children("app", a->id);
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0], b);
  EXPECT_EQ(children[1], c);
  EXPECT_EQ(pool.Children("other", a->id).size(), 1u);
  EXPECT_TRUE(pool.Children("app", c->id).empty());
  EXPECT_EQ(pool.num_chunks(), 4);
  EXPECT_EQ(pool.Usage("app").num_chunks, 3);
  EXPECT_EQ(pool.Usage("other").bytes, static_cast<int64_t>(b->bytes()));
  EXPECT_EQ(pool.bytes(), pool.Usage("app").bytes + pool.Usage("other").bytes);
  pool.Remove("app", b->id);
  EXPECT_EQ(pool.Children("app", a->id).size(), 1u);
  EXPECT_EQ(pool.UseByContent("app", b->content, 3.0), nullptr);
  pool.Clear(std::string("app"));
  EXPECT_EQ(pool.num_chunks(), 1);
  EXPECT_EQ(pool.Usage("app").num_chunks, 0);
  pool.Clear(std::nullopt);
  EXPECT_EQ(pool.num_chunks(), 0);
  EXPECT_EQ(pool.bytes(), 0);
}

TEST(MemoryPoolTest, ContentLookupPrefersExactChunks) {
  MemoryPool pool = Pool();
  kv::ChunkEntry inexact = MakeTestChunk(3, TestShape{}, kFingerprint);  // odd seed: inexact
  kv::ChunkEntry exact = inexact;
  exact.parent = 77;  // the same content elsewhere in the prefix tree
  exact.id = kv::ChainId(exact.parent, exact.content);
  exact.exact = true;
  auto e = std::make_shared<const kv::ChunkEntry>(exact);
  auto i = std::make_shared<const kv::ChunkEntry>(inexact);
  pool.Add("app", e, false, true, 1.0);
  pool.Add("app", i, false, true, 2.0);  // placed later, but inexact
  EXPECT_EQ(pool.UseByContent("app", exact.content, 3.0), e);
  pool.Remove("app", e->id);
  EXPECT_EQ(pool.UseByContent("app", exact.content, 3.0), i);
}

TEST(MemoryPoolTest, EvictsCleanUnpinnedChunksLeastRecentlyUsedFirst) {
  auto a = Chunk(2), b = Chunk(4), c = Chunk(6), d = Chunk(8);
  const int64_t one = static_cast<int64_t>(a->bytes());
  MemoryPool pool = Pool(2 * one);
  pool.Add("app", a, /*dirty=*/true, false, 1.0);
  pool.Add("app", b, false, true, 2.0);
  pool.Add("app", c, false, true, 3.0);
  EXPECT_EQ(pool.num_dirty(), 1);
  EXPECT_EQ(pool.EvictOverBudget(4.0), 1);  // a is dirty: b goes
  EXPECT_EQ(pool.Find("app", b->id), nullptr);
  pool.SetPinned("app", c->id, true);
  pool.Add("app", d, false, true, 5.0);
  EXPECT_EQ(pool.EvictOverBudget(6.0), 1);  // a dirty, c pinned: d goes
  EXPECT_EQ(pool.Find("app", d->id), nullptr);
  EXPECT_EQ(pool.bytes(), 2 * one);
  // Written back: a is clean and can go.
  pool.MarkWritten("app", a.get());
  EXPECT_EQ(pool.num_dirty(), 0);
  pool.Add("app", b, false, true, 7.0);
  EXPECT_EQ(pool.EvictOverBudget(8.0), 1);
  EXPECT_EQ(pool.Find("app", a->id), nullptr);
  EXPECT_NE(pool.Find("app", c->id), nullptr);
  EXPECT_EQ(pool.EvictOverBudget(9.0), 0);  // within budget
}

TEST(MemoryPoolTest, ReplacingKeepsPinAndDirtyFlag) {
  MemoryPool pool = Pool();
  auto a = Chunk(2);
  pool.Add("app", a, /*dirty=*/true, false, 1.0);
  pool.SetPinned("app", std::nullopt, true);
  auto again = std::make_shared<const kv::ChunkEntry>(*a);
  pool.Add("app", again, false, true, 2.0);  // loaded from flash meanwhile
  const PoolSlot* slot = pool.Find("app", a->id);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->entry, again);
  EXPECT_TRUE(slot->dirty);
  EXPECT_TRUE(slot->pinned);
  EXPECT_EQ(pool.num_chunks(), 1);
  EXPECT_EQ(pool.num_dirty(), 1);
  EXPECT_EQ(pool.bytes(), static_cast<int64_t>(a->bytes()));
  // Write-back of the first entry does not speak for the second.
  pool.MarkWritten("app", a.get());
  EXPECT_TRUE(pool.Find("app", a->id)->dirty);
  pool.MarkNotWritten("app", again.get());
  EXPECT_FALSE(pool.Find("app", a->id)->dirty);
  pool.Add("app", a, true, false, 3.0);
  pool.ClearDirty();
  EXPECT_EQ(pool.num_dirty(), 0);
}

std::vector<kv::ChunkId> Ids(const std::vector<kv::SpanCandidate>& found) {
  std::vector<kv::ChunkId> ids;
  for (const kv::SpanCandidate& c : found) ids.push_back(c.chunk_id);
  return ids;
}

TEST(MemoryPoolTest, SpansOfChunksNotInTheCatalogAreSearchable) {
  MemoryPool pool = Pool();
  // Chunks long enough to hold span fingerprints (kv::kFingerprintNgram tokens).
  const auto chunk = [](uint64_t seed) {
    return std::make_shared<const kv::ChunkEntry>(
        MakeTestChunk(seed, TestShape{.num_tokens = 40}, kFingerprint));
  };
  auto a = chunk(2), b = chunk(4);
  pool.Add("app", a, /*dirty=*/true, /*persisted=*/false, 1.0);
  pool.Add("app", b, false, /*persisted=*/true, 1.0);  // loaded from flash: in the catalog
  EXPECT_EQ(Ids(pool.SearchUnpersistedSpans("app", a->tokens, 4)),
            (std::vector<kv::ChunkId>{a->id}));
  EXPECT_TRUE(pool.SearchUnpersistedSpans("app", b->tokens, 4).empty());
  EXPECT_TRUE(pool.SearchUnpersistedSpans("other", a->tokens, 4).empty());
  pool.MarkWritten("app", a.get());  // now the catalog finds it
  EXPECT_TRUE(pool.SearchUnpersistedSpans("app", a->tokens, 4).empty());
  pool.MarkEvictedFromFlash("app", b->id);  // only in memory again
  EXPECT_EQ(Ids(pool.SearchUnpersistedSpans("app", b->tokens, 4)),
            (std::vector<kv::ChunkId>{b->id}));
  pool.Remove("app", b->id);
  EXPECT_TRUE(pool.SearchUnpersistedSpans("app", b->tokens, 4).empty());
}

TEST(MemoryPoolTest, InfosDescribeThePoolsChunks) {
  MemoryPool pool = Pool();
  auto a = Chunk(2), b = Chunk(4, a->id);
  pool.Add("app", a, false, true, 1.0);
  pool.Add("app", b, false, true, 1.0);
  pool.SetPinned("app", b->id, true);
  const kv::ChunkId ids[] = {b->id, 999};
  std::vector<ChunkInfo> infos = pool.Infos("app", ids);
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].id, PolicyChunkId("app", b->id));
  EXPECT_EQ(infos[0].parent, PolicyChunkId("app", a->id));
  EXPECT_TRUE(infos[0].pinned);
  EXPECT_TRUE(infos[0].in_pool);
  EXPECT_EQ(infos[0].bytes, static_cast<int64_t>(b->bytes()));
}

}  // namespace
}  // namespace reprise::store
