// The store keeps its label honest (kv::ChunkEntry::exact): exact KV is never replaced by
// approximate KV — in memory, on flash, or by another process sharing the store — and KV kept
// in a lossy codec is never exact.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "store/catalog.h"
#include "store/catalog_rebuild.h"
#include "store/chunk_store.h"
#include "store/file_system.h"
#include "store/kv_file.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::SameChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x1234;

// The chunk of `seed` (its id and tokens), exact or not, with KV drawn from `kv_seed`.
std::shared_ptr<const kv::ChunkEntry> Version(uint64_t seed, bool exact, uint64_t kv_seed) {
  kv::ChunkEntry e = MakeTestChunk(seed, TestShape{}, kFingerprint);
  e.kv = MakeTestChunk(kv_seed, TestShape{}, kFingerprint).kv;
  e.exact = exact;
  return std::make_shared<const kv::ChunkEntry>(std::move(e));
}

StoreOptions Options(const std::string& dir, KvCodec codec = KvCodec::kF16) {
  StoreOptions o;
  o.dir = dir + "/store";
  o.model_fingerprint = kFingerprint;
  o.codec = codec;
  o.prefetch = false;
  return o;
}

std::vector<std::string> KvFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".rpkv") out.push_back(e.path().filename().string());
  }
  return out;
}

TEST(ChunkStoreExactnessTest, MemoryKeepsExactKvAgainstApproximateKv) {
  testing_support::TempDir dir;
  auto store = std::move(ChunkStore::Open(Options(dir.path()))).value();
  auto ns = store->OpenNamespace("app");
  const auto exact = Version(2, true, 100), blended = Version(2, false, 101);
  ASSERT_TRUE(ns->Insert(exact).ok());
  ASSERT_TRUE(ns->Insert(blended).ok());
  EXPECT_EQ(ns->Peek(exact->id), exact);
  EXPECT_EQ(store->Stats().inexact_kept_out, 1);
  ASSERT_TRUE(store->Flush().ok());
  // And the other way round: exact KV replaces approximate KV.
  const auto later_blended = Version(4, false, 102), later_exact = Version(4, true, 103);
  ASSERT_TRUE(ns->Insert(later_blended).ok());
  ASSERT_TRUE(ns->Insert(later_exact).ok());
  EXPECT_EQ(ns->Peek(later_exact->id), later_exact);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_TRUE(ns->Contains(later_exact->id, /*require_exact=*/true));
}

// After a restart (flash only): an approximate insert does not shadow the exact chunk on
// flash, in memory or in the catalog; its file is never written.
TEST(ChunkStoreExactnessTest, FlashKeepsExactKvAgainstApproximateKv) {
  testing_support::TempDir dir;
  const auto exact = Version(2, true, 100), blended = Version(2, false, 101);
  {
    auto store = std::move(ChunkStore::Open(Options(dir.path()))).value();
    ASSERT_TRUE(store->OpenNamespace("app")->Insert(exact).ok());
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = std::move(ChunkStore::Open(Options(dir.path()))).value();
  auto ns = store->OpenNamespace("app");
  ASSERT_TRUE(ns->Insert(blended).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().inexact_kept_out, 1);
  EXPECT_EQ(store->Stats().chunks_written, 0);
  std::shared_ptr<const kv::ChunkEntry> found = ns->Find(exact->id);
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(SameChunk(*found, *exact));
  EXPECT_EQ(KvFiles(dir.path() + "/store").size(), 1u);
}

// Two processes sharing the store: one writes approximate KV of a chunk, the other exact KV
// of it, in either order and at once. The exact KV wins, and no file is left without a row.
TEST(ChunkStoreExactnessTest, TwoWritersOfOneChunkLeaveTheExactKv) {
  for (int order = 0; order < 3; ++order) {
    testing_support::TempDir dir;
    const auto exact = Version(2, true, 100), blended = Version(2, false, 101);
    auto a = std::move(ChunkStore::Open(Options(dir.path()))).value();
    auto b = std::move(ChunkStore::Open(Options(dir.path()))).value();
    const auto write = [](ChunkStore& store, std::shared_ptr<const kv::ChunkEntry> e) {
      EXPECT_TRUE(store.OpenNamespace("app")->Insert(std::move(e)).ok());
      EXPECT_TRUE(store.Flush().ok());
    };
    if (order == 0) {
      write(*a, exact);
      write(*b, blended);
    } else if (order == 1) {
      write(*b, blended);
      write(*a, exact);
    } else {
      std::thread t([&] { write(*b, blended); });
      write(*a, exact);
      t.join();
    }
    b.reset();
    a.reset();
    auto reader = std::move(ChunkStore::Open(Options(dir.path()))).value();
    std::shared_ptr<const kv::ChunkEntry> found = reader->OpenNamespace("app")->Find(exact->id);
    ASSERT_NE(found, nullptr) << "order " << order;
    EXPECT_TRUE(SameChunk(*found, *exact)) << "order " << order;
    EXPECT_EQ(KvFiles(dir.path() + "/store"),
              std::vector<std::string>{KvFileName("app", exact->id, true)})
        << "order " << order;
  }
}

// The catalog's upsert decides inside its transaction: a row holding exact KV is kept against
// one that does not (the caller removes the new file); an approximate row is replaced, and its
// file of another name reported for removal.
TEST(ChunkStoreExactnessTest, CatalogUpsertNeverReplacesExactKv) {
  testing_support::TempDir dir;
  Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(dir.path() + "/catalog.db");
  ASSERT_TRUE(catalog.ok()) << catalog.error().ToString();
  CatalogRow row;
  row.name_space = "app";
  row.chunk_id = 7;
  row.content_hash = 9;
  row.tokens = {1, 2, 3};
  row.model_fingerprint = kFingerprint;
  CatalogRow approximate = row;
  approximate.exact = false;
  approximate.file_name = KvFileName("app", 7, false);
  CatalogRow exact = row;
  exact.exact = true;
  exact.file_name = KvFileName("app", 7, true);
  CatalogRow lossy = exact;
  lossy.codec = KvCodec::kInt8;
  lossy.file_name = KvFileName("app", 7, false);
  ASSERT_NE(exact.file_name, approximate.file_name);

  auto upsert = [&](const CatalogRow& r) {
    Result<std::vector<UpsertResult>> out = (*catalog)->UpsertBatch(std::span(&r, 1));
    EXPECT_TRUE(out.ok());
    return out.ok() ? out->front() : UpsertResult{};
  };
  UpsertResult u = upsert(approximate);
  EXPECT_TRUE(u.written);
  EXPECT_TRUE(u.displaced_file.empty());
  u = upsert(exact);  // exact replaces approximate; the approximate file is no row's now
  EXPECT_TRUE(u.written);
  EXPECT_EQ(u.displaced_file, approximate.file_name);
  for (const CatalogRow& worse : {approximate, lossy}) {
    u = upsert(worse);
    EXPECT_FALSE(u.written);
    EXPECT_TRUE(u.displaced_file.empty());
  }
  Result<std::optional<CatalogRow>> kept = (*catalog)->Find("app", 7);
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_TRUE((*kept)->holds_exact_kv());
  EXPECT_EQ((*kept)->file_name, exact.file_name);
}

// KV kept in the int8 codec is lossy: after a restart it is not exact (Peek, Find, Contains),
// whatever its computation was; writing the same exactly computed chunk again into an int8
// store writes nothing new; an f16 store replaces it with exact KV, which int8 then keeps.
TEST(ChunkStoreExactnessTest, KvInALossyCodecIsNeverExact) {
  testing_support::TempDir dir;
  const auto exact = Version(2, true, 100);
  {
    auto store = std::move(ChunkStore::Open(Options(dir.path(), KvCodec::kInt8))).value();
    auto ns = store->OpenNamespace("app");
    ASSERT_TRUE(ns->Insert(exact).ok());
    EXPECT_TRUE(ns->Peek(exact->id)->exact);  // in memory: the computed f16 KV
    ASSERT_TRUE(store->Flush().ok());
  }
  {
    auto store = std::move(ChunkStore::Open(Options(dir.path(), KvCodec::kInt8))).value();
    auto ns = store->OpenNamespace("app");
    EXPECT_FALSE(ns->Peek(exact->id)->exact);
    EXPECT_FALSE(ns->Contains(exact->id, /*require_exact=*/true));
    EXPECT_TRUE(ns->Contains(exact->id, /*require_exact=*/false));
    std::shared_ptr<const kv::ChunkEntry> loaded = ns->Find(exact->id);
    ASSERT_NE(loaded, nullptr);
    EXPECT_FALSE(loaded->exact);
    // The same exactly computed KV again: in memory, exact; on flash, nothing to rewrite.
    ASSERT_TRUE(ns->Insert(exact).ok());
    EXPECT_EQ(ns->Peek(exact->id), exact);
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(store->Stats().chunks_written, 0);
  }
  {
    auto store = std::move(ChunkStore::Open(Options(dir.path(), KvCodec::kF16))).value();
    auto ns = store->OpenNamespace("app");
    ASSERT_TRUE(ns->Insert(exact).ok());
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(store->Stats().chunks_written, 1);
  }
  auto store = std::move(ChunkStore::Open(Options(dir.path(), KvCodec::kInt8))).value();
  auto ns = store->OpenNamespace("app");
  EXPECT_TRUE(ns->Contains(exact->id, /*require_exact=*/true));
  std::shared_ptr<const kv::ChunkEntry> found = ns->Find(exact->id);
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(SameChunk(*found, *exact));
  EXPECT_EQ(KvFiles(dir.path() + "/store"),
            std::vector<std::string>{KvFileName("app", exact->id, true)});
}

// A catalog rebuilt from the files of a chunk that has both an exact and an approximate file
// (a crash before the old one was removed) keeps the exact one and removes the other.
TEST(ChunkStoreExactnessTest, RebuildKeepsTheExactFileOfAChunk) {
  testing_support::TempDir dir;
  const auto exact = Version(2, true, 100), blended = Version(2, false, 101);
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem();
  ASSERT_TRUE(WriteKvFile(*fs, dir.path(), KvFileName("app", exact->id, true), *exact,
                          KvCodec::kF16, kFingerprint, "app")
                  .ok());
  ASSERT_TRUE(WriteKvFile(*fs, dir.path(), KvFileName("app", blended->id, false), *blended,
                          KvCodec::kF16, kFingerprint, "app")
                  .ok());
  Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(dir.path() + "/catalog.db");
  ASSERT_TRUE(catalog.ok());
  Result<CatalogRebuildReport> report = RebuildCatalog(*fs, **catalog, dir.path(), 1);
  ASSERT_TRUE(report.ok()) << report.error().ToString();
  EXPECT_EQ(report->num_rows_restored, 1);
  Result<std::optional<CatalogRow>> row = (*catalog)->Find("app", exact->id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_TRUE((*row)->holds_exact_kv());
  EXPECT_EQ(KvFiles(dir.path()), std::vector<std::string>{KvFileName("app", exact->id, true)});
}

}  // namespace
}  // namespace reprise::store
