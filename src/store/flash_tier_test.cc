#include "store/flash_tier.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "store/fault_injecting_file_system.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::SameChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x1234;

// Chunks of 40 tokens: long enough to hold span fingerprints.
WriteJob Job(uint64_t seed, kv::ChunkId parent = 0, std::string text = "") {
  return WriteJob{"app", std::make_shared<const kv::ChunkEntry>(MakeTestChunk(
                             seed, TestShape{.num_tokens = 40}, kFingerprint, parent,
                             std::move(text)))};
}

StoreOptions Options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir + "/store";
  o.model_fingerprint = kFingerprint;
  return o;
}

TEST(FlashTierTest, WrittenBatchIsFoundByEveryLookupAndLoadsBack) {
  testing_support::TempDir dir;
  auto flash = std::move(FlashTier::Open(Options(dir.path()))).value();
  EXPECT_TRUE(flash->is_persistent());
  const WriteJob a = Job(2, 0, "harbour lighthouse");
  const WriteJob b = Job(4, a.entry->id, "quiet meadow");
  const WriteJob batch[] = {a, b};
  const FlashBatchResult result = flash->WriteBatch(batch);
  ASSERT_TRUE(result.failure.ok());
  EXPECT_EQ(result.written, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(result.skipped.empty());

  std::optional<CatalogRow> row = flash->Find("app", b.entry->id);
  ASSERT_TRUE(row.has_value());
  std::shared_ptr<const kv::ChunkEntry> loaded = flash->Load(*row);
  ASSERT_NE(loaded, nullptr);
  EXPECT_TRUE(SameChunk(*loaded, *b.entry));
  EXPECT_EQ(flash->FindByContent("app", a.entry->content)->chunk_id, a.entry->id);
  ASSERT_EQ(flash->Children("app", a.entry->id).size(), 1u);
  const auto spans = flash->SearchSpans("app", a.entry->tokens, 4);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].first.chunk_id, a.entry->id);
  EXPECT_EQ(spans[0].first.tokens, a.entry->tokens);  // for matching without loading KV
  EXPECT_GT(spans[0].second, 0);
  EXPECT_TRUE(flash->SearchSpans("other", a.entry->tokens, 4).empty());
  EXPECT_FALSE(flash->Find("other", a.entry->id).has_value());

  StoreStats stats;
  flash->FillStats(stats);
  EXPECT_EQ(stats.chunks, 2);
  EXPECT_GT(stats.bytes_on_disk, 0);
  EXPECT_TRUE(stats.persistence_enabled);
}

TEST(FlashTierTest, EvictsTheChosenChunksOverTheDiskBudget) {
  testing_support::TempDir dir;
  StoreOptions options = Options(dir.path());
  options.disk_bytes = 1;  // any file is over budget
  auto flash = std::move(FlashTier::Open(options)).value();
  const WriteJob batch[] = {Job(2), Job(4)};
  ASSERT_TRUE(flash->WriteBatch(batch).failure.ok());
  int64_t asked = 0;
  const VictimChooser first_only = [&](std::span<const ChunkInfo> chunks, int64_t bytes) {
    asked = bytes;
    VictimSelection victims;
    for (const ChunkInfo& c : chunks) {
      if (c.id == PolicyChunkId("app", batch[0].entry->id)) victims.ids.push_back(c.id);
    }
    return victims;
  };
  Result<std::vector<PoolKey>> evicted = flash->EvictOverBudget(first_only);
  ASSERT_TRUE(evicted.ok());
  ASSERT_EQ(evicted->size(), 1u);
  EXPECT_EQ((*evicted)[0], (PoolKey{"app", batch[0].entry->id}));
  EXPECT_GT(asked, 0);
  EXPECT_FALSE(flash->Find("app", batch[0].entry->id).has_value());
  EXPECT_TRUE(flash->Find("app", batch[1].entry->id).has_value());
  StoreStats stats;
  flash->FillStats(stats);
  EXPECT_EQ(stats.flash_evictions, 1);
  EXPECT_EQ(stats.chunks, 1);
}

TEST(FlashTierTest, FullDiskFailsTheBatchAndPersistenceStopsOnce) {
  testing_support::TempDir dir;
  auto posix = NewPosixFileSystem();
  FaultInjectingFileSystem fs(posix.get());
  StoreOptions options = Options(dir.path());
  options.file_system = &fs;
  auto flash = std::move(FlashTier::Open(options)).value();
  fs.FailAllWrites(true);
  const WriteJob batch[] = {Job(2)};
  const FlashBatchResult result = flash->WriteBatch(batch);
  EXPECT_EQ(result.failure.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(result.written.empty());
  EXPECT_TRUE(flash->DisablePersistence(result.failure));
  EXPECT_FALSE(flash->DisablePersistence(result.failure));  // once
  EXPECT_FALSE(flash->is_persistent());
  StoreStats stats;
  flash->FillStats(stats);
  EXPECT_FALSE(stats.persistence_enabled);
  EXPECT_NE(stats.persistence_error.find("no space"), std::string::npos);
  EXPECT_EQ(flash->Gc(nullptr, nullptr).status().code(), StatusCode::kUnavailable);
}

TEST(FlashTierTest, BadFileIsAMissAndIsDropped) {
  testing_support::TempDir dir;
  StoreOptions options = Options(dir.path());
  auto flash = std::move(FlashTier::Open(options)).value();
  const WriteJob batch[] = {Job(2)};
  ASSERT_TRUE(flash->WriteBatch(batch).failure.ok());
  std::optional<CatalogRow> row = flash->Find("app", batch[0].entry->id);
  ASSERT_TRUE(row.has_value());
  std::filesystem::resize_file(options.dir + "/" + row->file_name, 10);
  EXPECT_EQ(flash->Load(*row), nullptr);
  EXPECT_FALSE(flash->Find("app", batch[0].entry->id).has_value());
  StoreStats stats;
  flash->FillStats(stats);
  EXPECT_EQ(stats.corrupt_dropped, 1);
}

}  // namespace
}  // namespace reprise::store
