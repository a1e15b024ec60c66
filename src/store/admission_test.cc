#include "store/admission.h"

#include <gtest/gtest.h>

#include "store/chunk_store.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x5151;

std::shared_ptr<const kv::ChunkEntry> Chunk(uint64_t seed, bool declared = false,
                                            kv::ChunkId parent = kv::kRootChunkId) {
  kv::ChunkEntry e = MakeTestChunk(seed, TestShape{}, kFingerprint, parent);
  e.declared_reusable = declared;
  return std::make_shared<const kv::ChunkEntry>(std::move(e));
}

// The same content as `chunk` at another place in the prefix tree.
std::shared_ptr<const kv::ChunkEntry> Moved(const kv::ChunkEntry& chunk, kv::ChunkId parent) {
  auto e = std::make_shared<kv::ChunkEntry>(chunk);
  e->parent = parent;
  e->id = kv::ChainId(parent, e->content);
  return e;
}

StoreOptions Options(const std::string& dir, int admit_after) {
  StoreOptions o;
  o.dir = dir + "/store";
  o.model_fingerprint = kFingerprint;
  o.admit_after_sightings = admit_after;
  o.prefetch = false;
  return o;
}

TEST(SightingCounterTest, CountsPerNamespaceAndContent) {
  SightingCounter counter(100);
  EXPECT_EQ(counter.Sight("a", 7, 10), 1);
  EXPECT_EQ(counter.Sight("a", 7, 11), 2);
  EXPECT_EQ(counter.Sight("b", 7, 12), 1);
  EXPECT_EQ(counter.Sight("a", 8, 13), 1);
  EXPECT_EQ(counter.Count("a", 7), 2);
  EXPECT_EQ(counter.Count("c", 7), 0);
}

TEST(SightingCounterTest, TakeChangedReportsEachChangedRowOnceWithItsCount) {
  SightingCounter counter(100);
  counter.Sight("a", 7, 10);
  counter.Sight("a", 7, 20);
  counter.Sight("b", 9, 15);
  std::vector<SightingRow> rows = counter.TakeChanged();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name_space, "a");
  EXPECT_EQ(rows[0].content, 7u);
  EXPECT_EQ(rows[0].count, 2);
  EXPECT_EQ(rows[0].last_seen_us, 20);
  EXPECT_EQ(rows[1].count, 1);
  EXPECT_TRUE(counter.TakeChanged().empty());
  counter.Sight("b", 9, 30);
  rows = counter.TakeChanged();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].count, 2);
}

TEST(SightingCounterTest, RestoreKeepsTheLargerCountAndIsNotReportedAsChanged) {
  SightingCounter counter(100);
  counter.Sight("a", 7, 10);
  counter.TakeChanged();
  counter.Restore({"a", 7, 5, 3});
  counter.Restore({"a", 8, 2, 3});
  EXPECT_EQ(counter.Count("a", 7), 5);
  EXPECT_EQ(counter.Count("a", 8), 2);
  counter.Restore({"a", 7, 1, 99});
  EXPECT_EQ(counter.Count("a", 7), 5);
  EXPECT_TRUE(counter.TakeChanged().empty());
}

TEST(SightingCounterTest, StaysBoundedAndForgetsTheLeastRecentlySeen) {
  SightingCounter counter(64);
  counter.Sight("a", 1, 1000000);  // recent: kept
  for (uint64_t c = 2; c < 500; ++c) counter.Sight("a", c, static_cast<int64_t>(c));
  counter.Sight("a", 1, 2000000);
  EXPECT_LE(counter.size(), 64u);
  EXPECT_EQ(counter.Count("a", 1), 2);
  EXPECT_EQ(counter.Count("a", 2), 0);  // among the oldest: forgotten
  EXPECT_EQ(counter.Count("a", 499), 1);
}

TEST(AdmissionTest, OptionsAreChecked) {
  testing_support::TempDir dir;
  EXPECT_EQ(ChunkStore::Open(Options(dir.path(), 0)).error().code(), StatusCode::kInvalidArgument);
  StoreOptions o = Options(dir.path(), 2);
  o.max_sightings = 1;
  EXPECT_EQ(ChunkStore::Open(o).error().code(), StatusCode::kInvalidArgument);
}

TEST(AdmissionTest, AChunkSeenOnceStaysInMemoryAndIsWrittenWhenItRecurs) {
  testing_support::TempDir dir;
  auto store = std::move(ChunkStore::Open(Options(dir.path(), 2))).value();
  auto ns = store->OpenNamespace("app");
  auto a = Chunk(2);
  ASSERT_TRUE(ns->Insert(a).ok());
  ASSERT_TRUE(store->Flush().ok());
  StoreStats stats = store->Stats();
  EXPECT_EQ(stats.chunks, 0);  // not on flash
  EXPECT_EQ(stats.chunks_written, 0);
  EXPECT_EQ(stats.chunks_awaiting_admission, 1);
  // Served from memory meanwhile, like any chunk; found by a second prompt: admitted.
  EXPECT_EQ(ns->Find(a->id), a);
  ASSERT_TRUE(store->Flush().ok());
  stats = store->Stats();
  EXPECT_EQ(stats.chunks, 1);
  EXPECT_EQ(stats.chunks_awaiting_admission, 0);
  EXPECT_EQ(stats.admitted_on_recurrence, 1);
  // Peeks and Contains (planning, deciding what to store) are not sightings.
  auto b = Chunk(4);
  ASSERT_TRUE(ns->Insert(b).ok());
  EXPECT_NE(ns->Peek(b->id), nullptr);
  EXPECT_TRUE(ns->Contains(b->id, false));
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().chunks, 1);
}

TEST(AdmissionTest, DeclaredReusableChunksAreWrittenAtOnce) {
  testing_support::TempDir dir;
  auto store = std::move(ChunkStore::Open(Options(dir.path(), 3))).value();
  auto ns = store->OpenNamespace("app");
  ASSERT_TRUE(ns->Insert(Chunk(2, /*declared=*/true)).ok());
  ASSERT_TRUE(ns->Insert(Chunk(4)).ok());
  ASSERT_TRUE(store->Flush().ok());
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.chunks, 1);
  EXPECT_EQ(stats.chunks_awaiting_admission, 1);
}

TEST(AdmissionTest, TheSameContentElsewhereCountsAndAChunkDroppedByThePoolIsNotWritten) {
  testing_support::TempDir dir;
  StoreOptions o = Options(dir.path(), 2);
  auto a = Chunk(2);
  o.pool_bytes = static_cast<int64_t>(a->bytes() * 3);
  auto store = std::move(ChunkStore::Open(o)).value();
  auto ns = store->OpenNamespace("app");
  std::vector<std::shared_ptr<const kv::ChunkEntry>> inserted = {a};
  for (uint64_t seed = 10; seed < 20; seed += 2) inserted.push_back(Chunk(seed));
  for (const auto& chunk : inserted) ASSERT_TRUE(ns->Insert(chunk).ok());
  ASSERT_TRUE(store->Flush().ok());
  StoreStats stats = store->Stats();
  EXPECT_EQ(stats.chunks, 0);
  EXPECT_GE(stats.dropped_unadmitted, 3);
  // One the pool dropped: never written, so gone.
  std::shared_ptr<const kv::ChunkEntry> dropped;
  for (const auto& chunk : inserted) {
    if (ns->Peek(chunk->id) == nullptr) dropped = chunk;
  }
  ASSERT_NE(dropped, nullptr);
  // A later prompt computes the same text at another position: its second sighting.
  auto moved = Moved(*dropped, Chunk(30)->id);
  ASSERT_TRUE(ns->Insert(moved).ok());
  ASSERT_TRUE(store->Flush().ok());
  stats = store->Stats();
  EXPECT_EQ(stats.chunks, 1);
  ASSERT_NE(ns->Peek(moved->id), nullptr);
}

TEST(AdmissionTest, SightingsSurviveAReopenAndAreKeptPerNamespace) {
  testing_support::TempDir dir;
  auto a = Chunk(2);
  {
    auto store = std::move(ChunkStore::Open(Options(dir.path(), 2))).value();
    ASSERT_TRUE(store->OpenNamespace("app")->Insert(a).ok());
    ASSERT_TRUE(store->OpenNamespace("other")->Insert(Chunk(4)).ok());
  }  // closing persists the sightings
  auto store = std::move(ChunkStore::Open(Options(dir.path(), 2))).value();
  EXPECT_EQ(store->Stats().chunks, 0);
  ASSERT_TRUE(store->OpenNamespace("other")->Insert(a).ok());  // another namespace: 1st
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().chunks, 0);
  ASSERT_TRUE(store->OpenNamespace("app")->Insert(a).ok());  // 2nd sighting in "app"
  ASSERT_TRUE(store->Flush().ok());
  const std::vector<CatalogRow> rows = store->List(std::nullopt).value();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name_space, "app");
  // Clearing a namespace forgets its sightings too.
  ASSERT_TRUE(store->Clear(std::string("other")).ok());
}

TEST(AdmissionTest, PinningAChunkAwaitingAdmissionWritesAndPinsIt) {
  testing_support::TempDir dir;
  auto store = std::move(ChunkStore::Open(Options(dir.path(), 4))).value();
  auto ns = store->OpenNamespace("app");
  auto a = Chunk(2), b = Chunk(4), c = Chunk(6);
  ASSERT_TRUE(ns->Insert(a).ok());
  ASSERT_TRUE(store->OpenNamespace("other")->Insert(c).ok());
  ASSERT_TRUE(store->SetPinned("app", a->id, true).ok());
  std::vector<CatalogRow> rows = store->List(std::string("app")).value();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].pinned);
  // Pinning the namespace admits all of its chunks, and no other namespace's.
  ASSERT_TRUE(ns->Insert(b).ok());
  ASSERT_TRUE(store->SetPinned("app", std::nullopt, true).ok());
  rows = store->List(std::nullopt).value();
  ASSERT_EQ(rows.size(), 2u);
  for (const CatalogRow& row : rows) {
    EXPECT_EQ(row.name_space, "app");
    EXPECT_TRUE(row.pinned);
  }
}

TEST(AdmissionTest, WithPersistenceOffNothingAwaitsAdmission) {
  testing_support::TempDir dir;
  StoreOptions o = Options(dir.path(), 2);
  o.read_only = true;
  { auto created = std::move(ChunkStore::Open(Options(dir.path(), 2))).value(); }
  auto store = std::move(ChunkStore::Open(o)).value();
  auto ns = store->OpenNamespace("app");
  ASSERT_TRUE(ns->Insert(Chunk(2)).ok());
  EXPECT_EQ(store->Stats().chunks_awaiting_admission, 0);
}

}  // namespace
}  // namespace reprise::store
