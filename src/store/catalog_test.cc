// Catalog: lookups by id, content and parent; span search; conflicts and batches; access
// statistics, co-access and pins; persistence across reopen; migrations from older versions
// (the keyword index of versions 1-3 dropped); read-only use.
#include "store/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kv/span_fingerprints.h"
#include "store/catalog_schema.h"
#include "store/immutable_dir_for_test.h"
#include "store/sqlite_db.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

CatalogRow MakeRow(std::string name_space, kv::ChunkId id, kv::ChunkId parent,
                   kv::ContentHash content) {
  CatalogRow row;
  row.name_space = std::move(name_space);
  row.chunk_id = id;
  row.parent_id = parent;
  row.content_hash = content;
  row.exact = true;
  row.tokens = {static_cast<int32_t>(id), -1, 7};
  row.model_fingerprint = 42;
  row.codec = KvCodec::kInt8;
  row.file_name = "f" + std::to_string(id) + ".rpkv";
  row.file_bytes = 1000 + id;
  row.payload_checksum = 0xfeedfacecafebeefull;  // needs all 64 bits
  row.created_us = 10;
  row.last_access_us = 10;
  row.provenance = kv::KvProvenance{kv::KvOrigin::kComputed, 0.0f, -1};
  return row;
}

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = temp_.path() + "/" + std::string(kCatalogFileName);
    auto catalog = Catalog::Open(path_);
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
  }

  int64_t InsertOrDie(const CatalogRow& row) {
    auto id = catalog_->Insert(row);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.value_or(-1);
  }

  testing_support::TempDir temp_;
  std::string path_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, FindsByIdContentAndParent) {
  const CatalogRow a = MakeRow("ns", 1, kv::kRootChunkId, 100);
  const int64_t a_id = InsertOrDie(a);
  const int64_t b_id = InsertOrDie(MakeRow("ns", UINT64_MAX - 3, 1, 200));
  InsertOrDie(MakeRow("ns", 3, 1, 300));
  InsertOrDie(MakeRow("other", 1, kv::kRootChunkId, 100));

  auto found = catalog_->Find("ns", 1);
  ASSERT_TRUE(found.ok() && found->has_value());
  const CatalogRow& row = **found;
  EXPECT_EQ(row.row_id, a_id);
  EXPECT_EQ(row.name_space, "ns");
  EXPECT_EQ(row.content_hash, 100u);
  EXPECT_EQ(row.tokens, a.tokens);
  EXPECT_EQ(row.num_tokens, 3);
  EXPECT_EQ(row.codec, KvCodec::kInt8);
  EXPECT_EQ(row.payload_checksum, a.payload_checksum);
  EXPECT_EQ(row.file_name, a.file_name);
  EXPECT_TRUE(row.exact);
  EXPECT_EQ(row.provenance, a.provenance);

  auto big = catalog_->Find("ns", UINT64_MAX - 3);
  ASSERT_TRUE(big.ok() && big->has_value());
  EXPECT_EQ((*big)->row_id, b_id);
  EXPECT_FALSE(catalog_->Find("ns", 99)->has_value());
  EXPECT_FALSE(catalog_->Find("nope", 1)->has_value());
  EXPECT_EQ((*catalog_->FindByRowId(b_id))->chunk_id, UINT64_MAX - 3);

  auto by_content = catalog_->FindByContent("ns", 300);
  ASSERT_TRUE(by_content.ok() && by_content->has_value());
  EXPECT_EQ((*by_content)->chunk_id, 3u);
  EXPECT_FALSE(catalog_->FindByContent("ns", 999)->has_value());

  auto children = catalog_->Children("ns", 1);
  ASSERT_TRUE(children.ok());
  ASSERT_EQ(children->size(), 2u);
  EXPECT_EQ(catalog_->Children("ns", 1, 1)->size(), 1u);
  EXPECT_EQ(catalog_->Children("other", 1)->size(), 0u);
}

TEST_F(CatalogTest, SearchSpansFindsRowsSharingASpanInTheirNamespace) {
  const auto tokens = [](int32_t first, int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + 13 * i;
    return t;
  };
  const std::vector<int32_t> shared = tokens(5000, 40), header = tokens(9000, 40);
  CatalogRow a = MakeRow("ns", 1, kv::kRootChunkId, 100);
  a.tokens = tokens(100, 30);
  a.tokens.insert(a.tokens.end(), shared.begin(), shared.end());
  CatalogRow other = a;
  other.name_space = "other";
  const int64_t a_id = InsertOrDie(a);
  InsertOrDie(other);
  // Three rows that start with the same header: past two rows per fingerprint, boilerplate.
  for (kv::ChunkId id = 10; id < 13; ++id) {
    CatalogRow row = MakeRow("ns", id, kv::kRootChunkId, 200 + id);
    row.tokens = header;
    const std::vector<int32_t> body = tokens(static_cast<int32_t>(20000 + 1000 * id), 40);
    row.tokens.insert(row.tokens.end(), body.begin(), body.end());
    InsertOrDie(row);
  }
  std::vector<int32_t> query = tokens(70000, 20);
  query.insert(query.end(), shared.begin(), shared.end());
  auto found = catalog_->SearchSpans("ns", kv::SpanFingerprints(query), 2, 8);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].row_id, a_id);
  EXPECT_TRUE(catalog_->SearchSpans("ns", kv::SpanFingerprints(header), 2, 8)->empty());
  EXPECT_EQ(catalog_->SearchSpans("ns", kv::SpanFingerprints(header), 3, 8)->size(), 3u);
  EXPECT_EQ(catalog_->SearchSpans("ns", kv::SpanFingerprints(header), 3, 2)->size(), 2u);
  // A replaced row is indexed by its new tokens; a deleted one is gone.
  a.tokens = tokens(300, 60);
  ASSERT_TRUE(catalog_->Insert(a, OnConflict::kReplace).ok());
  EXPECT_TRUE(catalog_->SearchSpans("ns", kv::SpanFingerprints(query), 2, 8)->empty());
  EXPECT_EQ(catalog_->SearchSpans("ns", kv::SpanFingerprints(a.tokens), 2, 8)->size(), 1u);
  const int64_t ids[] = {a_id};
  ASSERT_TRUE(catalog_->Delete(ids).ok());
  EXPECT_TRUE(catalog_->SearchSpans("ns", kv::SpanFingerprints(a.tokens), 2, 8)->empty());
  EXPECT_EQ(catalog_->SearchSpans("other", kv::SpanFingerprints(query), 2, 8)->size(), 1u);
}

TEST_F(CatalogTest, ProvenanceIsKeptAndReplacedWithTheRow) {
  CatalogRow blended = MakeRow("ns", 4, kv::kRootChunkId, 400);
  blended.exact = false;
  blended.provenance = kv::KvProvenance{kv::KvOrigin::kBlended, 0.125f, 2};
  InsertOrDie(blended);
  EXPECT_EQ((*catalog_->Find("ns", 4))->provenance, blended.provenance);
  CatalogRow computed = blended;
  computed.exact = true;
  computed.provenance = kv::KvProvenance{kv::KvOrigin::kComputed, 0.0f, -1};
  ASSERT_TRUE(catalog_->InsertBatch(std::span(&computed, 1), OnConflict::kReplace).ok());
  EXPECT_EQ((*catalog_->Find("ns", 4))->provenance, computed.provenance);
  // A value no writer makes reads as a bad row, never as a provenance.
  auto db = SqliteDb::Open(path_, {});
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("UPDATE chunks SET recompute_ratio = 7 WHERE chunk_id = 4").ok());
  EXPECT_FALSE(catalog_->Find("ns", 4).ok());
}

TEST_F(CatalogTest, FindByContentPrefersExactThenRecent) {
  CatalogRow old_exact = MakeRow("ns", 1, 0, 500);
  old_exact.last_access_us = 1;
  CatalogRow new_inexact = MakeRow("ns", 2, 9, 500);
  new_inexact.exact = false;
  new_inexact.last_access_us = 100;
  CatalogRow newer_exact = MakeRow("ns", 3, 8, 500);
  newer_exact.last_access_us = 50;
  InsertOrDie(old_exact);
  InsertOrDie(new_inexact);
  EXPECT_EQ((*catalog_->FindByContent("ns", 500))->chunk_id, 1u);
  InsertOrDie(newer_exact);
  EXPECT_EQ((*catalog_->FindByContent("ns", 500))->chunk_id, 3u);
}

TEST_F(CatalogTest, ConflictsFailKeepOrReplace) {
  const int64_t id = InsertOrDie(MakeRow("ns", 1, 0, 100));
  EXPECT_EQ(catalog_->Insert(MakeRow("ns", 1, 0, 100)).status().code(),
            StatusCode::kInvalidArgument);
  auto kept = catalog_->Insert(MakeRow("ns", 1, 0, 777), OnConflict::kKeep);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, id);
  EXPECT_EQ((*catalog_->Find("ns", 1))->content_hash, 100u);

  CatalogRow replacement = MakeRow("ns", 1, 0, 888);
  replacement.file_bytes = 5;
  replacement.tokens = {9, 9, 9};
  auto replaced = catalog_->Insert(replacement, OnConflict::kReplace);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(*replaced, id);
  EXPECT_EQ((*catalog_->Find("ns", 1))->content_hash, 888u);
  EXPECT_EQ((*catalog_->Find("ns", 1))->file_bytes, 5u);
  EXPECT_EQ((*catalog_->Find("ns", 1))->tokens, (std::vector<int32_t>{9, 9, 9}));
  EXPECT_EQ(catalog_->Stats()->num_chunks, 1);
}

TEST_F(CatalogTest, BatchIsAllOrNothing) {
  std::vector<CatalogRow> rows;
  for (kv::ChunkId id = 1; id <= 5; ++id) rows.push_back(MakeRow("ns", id, 0, id * 10));
  auto ids = catalog_->InsertBatch(rows);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 5u);
  EXPECT_TRUE(std::is_sorted(ids->begin(), ids->end()));

  std::vector<CatalogRow> second = {MakeRow("ns", 6, 0, 60), MakeRow("ns", 3, 0, 30),
                                    MakeRow("ns", 7, 0, 70)};
  EXPECT_EQ(catalog_->InsertBatch(second).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(catalog_->Find("ns", 6)->has_value());  // rolled back
  EXPECT_EQ(catalog_->Stats()->num_chunks, 5);
  auto kept = catalog_->InsertBatch(second, OnConflict::kKeep);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)[1], (*ids)[2]);
  EXPECT_EQ(catalog_->Stats()->num_chunks, 7);
}

TEST_F(CatalogTest, DeleteRemovesRowsAndCoAccess) {
  const int64_t a = InsertOrDie(MakeRow("ns", 1, 0, 10));
  const int64_t b = InsertOrDie(MakeRow("ns", 2, 0, 20));
  const kv::ChunkId pair[] = {1, 2};
  ASSERT_TRUE(catalog_->AddCoAccess("ns", pair).ok());
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 1, 2), 1);
  const int64_t to_delete[] = {a, 12345};
  ASSERT_TRUE(catalog_->Delete(to_delete).ok());
  EXPECT_FALSE(catalog_->Find("ns", 1)->has_value());
  EXPECT_EQ((*catalog_->Find("ns", 2))->row_id, b);
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 1, 2), 0);
  ASSERT_TRUE(catalog_->Delete({}).ok());
}

TEST_F(CatalogTest, RecordsAccessPerTier) {
  const int64_t a = InsertOrDie(MakeRow("ns", 1, 0, 10));
  const int64_t ids[] = {a};
  ASSERT_TRUE(catalog_->RecordAccess(ids, 500, AccessTier::kPool).ok());
  ASSERT_TRUE(catalog_->RecordAccess(ids, 300, AccessTier::kFlash).ok());  // older: time kept
  ASSERT_TRUE(catalog_->RecordAccess(ids, 900, AccessTier::kFlash).ok());
  const CatalogRow row = **catalog_->Find("ns", 1);
  EXPECT_EQ(row.last_access_us, 900);
  EXPECT_EQ(row.access_count, 3);
  EXPECT_EQ(row.pool_hits, 1);
  EXPECT_EQ(row.flash_hits, 2);
  EXPECT_EQ(row.created_us, 10);
}

TEST_F(CatalogTest, CountsCoAccessPairs) {
  const kv::ChunkId prompt1[] = {5, 1, 3, 1};  // duplicates and order do not matter
  const kv::ChunkId prompt2[] = {3, 5};
  ASSERT_TRUE(catalog_->AddCoAccess("ns", prompt1).ok());
  ASSERT_TRUE(catalog_->AddCoAccess("ns", prompt2).ok());
  ASSERT_TRUE(catalog_->AddCoAccess("other", prompt2).ok());
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 3, 5), 2);
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 5, 3), 2);
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 1, 5), 1);
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 1, 1), 0);
  auto partners = catalog_->CoAccessPartners("ns", 5, 10);
  ASSERT_TRUE(partners.ok());
  ASSERT_EQ(partners->size(), 2u);
  EXPECT_EQ((*partners)[0].chunk_id, 3u);
  EXPECT_EQ((*partners)[0].count, 2);
  EXPECT_EQ((*partners)[1].chunk_id, 1u);
  // Huge ids (stored as negative int64) order consistently.
  const kv::ChunkId big[] = {UINT64_MAX, 2};
  ASSERT_TRUE(catalog_->AddCoAccess("ns", big).ok());
  EXPECT_EQ(*catalog_->CoAccessCount("ns", 2, UINT64_MAX), 1);
  EXPECT_EQ(catalog_->CoAccessPartners("ns", UINT64_MAX, 10)->at(0).chunk_id, 2u);
}

TEST_F(CatalogTest, PinsOneChunkOrANamespace) {
  InsertOrDie(MakeRow("ns", 1, 0, 10));
  InsertOrDie(MakeRow("ns", 2, 0, 20));
  InsertOrDie(MakeRow("other", 1, 0, 10));
  ASSERT_TRUE(catalog_->SetPinned("ns", 1, true).ok());
  EXPECT_TRUE((*catalog_->Find("ns", 1))->pinned);
  EXPECT_FALSE((*catalog_->Find("ns", 2))->pinned);
  EXPECT_EQ(catalog_->SetPinned("ns", 99, true).code(), StatusCode::kNotFound);
  ASSERT_TRUE(catalog_->SetPinned("ns", std::nullopt, true).ok());
  EXPECT_EQ(catalog_->Stats()->num_pinned, 2);
  ASSERT_TRUE(catalog_->SetPinned("ns", std::nullopt, false).ok());
  EXPECT_EQ(catalog_->Stats()->num_pinned, 0);
}

TEST_F(CatalogTest, ListsAndCounts) {
  InsertOrDie(MakeRow("b", 1, 0, 10));
  InsertOrDie(MakeRow("a", 2, 0, 20));
  InsertOrDie(MakeRow("a", 3, 0, 30));
  auto all = catalog_->ListRows(std::nullopt);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_TRUE(all->front().tokens.empty());
  EXPECT_EQ(all->front().num_tokens, 3);
  EXPECT_EQ(catalog_->ListRows("a")->size(), 2u);
  EXPECT_EQ(*catalog_->ListNamespaces(), (std::vector<std::string>{"a", "b"}));
  const CatalogStats stats = *catalog_->Stats();
  EXPECT_EQ(stats.num_chunks, 3);
  EXPECT_EQ(stats.file_bytes, 1001 + 1002 + 1003);
  EXPECT_EQ(stats.num_namespaces, 2);
}

TEST_F(CatalogTest, SurvivesCloseAndReopen) {
  const int64_t id = InsertOrDie(MakeRow("ns", 1, 0, 10));
  const kv::ChunkId pair[] = {1, 2};
  ASSERT_TRUE(catalog_->AddCoAccess("ns", pair).ok());
  catalog_.reset();
  auto reopened = Catalog::Open(path_);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ((*reopened)->Find("ns", 1)->value().row_id, id);
  EXPECT_EQ(*(*reopened)->CoAccessCount("ns", 1, 2), 1);
  EXPECT_EQ((*reopened)->InsertBatch(std::vector<CatalogRow>{MakeRow("ns", 2, 0, 20)})->size(), 1u);
}

TEST_F(CatalogTest, ReadOnlyCatalogRefusesWritesAndChangesNothing) {
  InsertOrDie(MakeRow("ns", 1, 0, 10));
  CatalogOptions read_only;
  read_only.read_only = true;
  auto reader = Catalog::Open(path_, read_only);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Catalog& catalog = **reader;
  const int64_t ids[] = {1};
  const kv::ChunkId pair[] = {1, 2};
  EXPECT_EQ(catalog.Insert(MakeRow("ns", 2, 0, 20)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(catalog.Delete(ids).code(), StatusCode::kUnavailable);
  EXPECT_EQ(catalog.RecordAccess(ids, 5, AccessTier::kPool).code(), StatusCode::kUnavailable);
  EXPECT_EQ(catalog.AddCoAccess("ns", pair).code(), StatusCode::kUnavailable);
  EXPECT_EQ(catalog.SetPinned("ns", 1, true).code(), StatusCode::kUnavailable);
  EXPECT_EQ(catalog.Stats()->num_chunks, 1);
  EXPECT_EQ(catalog.Find("ns", 1)->value().access_count, 0);
  CatalogOptions missing_options = read_only;
  EXPECT_EQ(Catalog::Open(temp_.path() + "/none.db", missing_options).status().code(),
            StatusCode::kNotFound);
}

TEST_F(CatalogTest, OneBadRowNeitherHidesTheOthersNorSurvivesDropInvalidRows) {
  for (kv::ChunkId id = 1; id <= 4; ++id) InsertOrDie(MakeRow("ns", id, 0, id * 10));
  {
    // Damage written behind the catalog's back: an unknown codec, a negative token count, a
    // token blob of the wrong size.
    auto db = SqliteDb::Open(path_, {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE chunks SET codec = 9 WHERE chunk_id = 2; "
                         "UPDATE chunks SET num_tokens = -5 WHERE chunk_id = 3; "
                         "UPDATE chunks SET tokens = x'0102' WHERE chunk_id = 4")
                    .ok());
  }
  auto rows = catalog_->ListRows(std::nullopt);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // Listings read no tokens, so the bad blob shows only in lookups.
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].chunk_id, 1u);
  EXPECT_EQ((*rows)[1].chunk_id, 4u);
  EXPECT_EQ(catalog_->num_bad_rows_skipped(), 2);
  EXPECT_EQ(catalog_->Find("ns", 4).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(catalog_->Find("ns", 2).status().code(), StatusCode::kCorrupt);
  auto dropped = catalog_->DropInvalidRows();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  std::sort(dropped->begin(), dropped->end());
  EXPECT_EQ(*dropped, (std::vector<std::string>{"f2.rpkv", "f3.rpkv", "f4.rpkv"}));
  EXPECT_EQ(catalog_->Stats()->num_chunks, 1);
  EXPECT_EQ(catalog_->Find("ns", 2)->has_value(), false);
  EXPECT_EQ(catalog_->ListRows("ns")->size(), 1u);
  EXPECT_TRUE(catalog_->DropInvalidRows()->empty());
}

TEST_F(CatalogTest, CountersPersistAcrossReopen) {
  EXPECT_EQ(*catalog_->Counter("corrupt_dropped"), 0);
  ASSERT_TRUE(catalog_->AddToCounter("corrupt_dropped", 2).ok());
  ASSERT_TRUE(catalog_->AddToCounter("corrupt_dropped", 3).ok());
  EXPECT_EQ(*catalog_->Counter("corrupt_dropped"), 5);
  catalog_.reset();
  auto reopened = Catalog::Open(path_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->Counter("corrupt_dropped"), 5);
  EXPECT_EQ(*(*reopened)->Counter("other"), 0);
}

TEST_F(CatalogTest, ReadOnlyCatalogInAnUnwritableFolderIsStillRead) {
  InsertOrDie(MakeRow("ns", 1, 0, 10));
  catalog_.reset();  // checkpoints; SQLite removes -wal and -shm
  test_util::ImmutableDirForTest immutable(temp_.path());
  if (!immutable.is_active()) GTEST_SKIP() << "chattr +i is not available here";
  CatalogOptions read_only;
  read_only.read_only = true;
  auto reader = Catalog::Open(path_, read_only);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->Stats()->num_chunks, 1);
  EXPECT_EQ((*reader)->Find("ns", 1)->value().chunk_id, 1u);
  EXPECT_EQ((*reader)->Insert(MakeRow("ns", 2, 0, 20)).status().code(), StatusCode::kUnavailable);
}

TEST(CatalogMigrationTest, Version1DatabaseIsMigratedAndKeepsItsRows) {
  testing_support::TempDir temp;
  const std::string path = temp.path() + "/catalog.db";
  {
    auto db = SqliteDb::Open(path, {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateCatalog(*db, 1).ok());
    EXPECT_EQ(*ReadCatalogSchemaVersion(*db), 1);
    // A version-1 row, written with version-1 columns only.
    ASSERT_TRUE(db->Exec("INSERT INTO chunks (row_id, namespace, chunk_id, parent_id, "
                         "content_hash, exact, num_tokens, model_fingerprint, codec, file_name, "
                         "file_bytes, payload_checksum, pinned, created_us, last_access_us, "
                         "access_count, tokens) VALUES (7, 'ns', 11, 5, 99, 1, 1, 42, 0, "
                         "'a.rpkv', 123, 0, 1, 1, 2, 3, x'01000000'); "
                         "INSERT INTO chunk_text (rowid, text) VALUES (7, 'old echidna');")
                    .ok());
    EXPECT_EQ(*db->QueryInt64("SELECT COUNT(*) FROM sqlite_master WHERE name = "
                              "'chunks_by_parent'"),
              0);
  }
  auto catalog = Catalog::Open(path);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  auto row = (*catalog)->Find("ns", 11);
  ASSERT_TRUE(row.ok() && row->has_value()) << row.status().ToString();
  EXPECT_EQ((*row)->row_id, 7);
  EXPECT_EQ((*row)->tokens, std::vector<int32_t>{1});
  EXPECT_EQ((*row)->access_count, 3);
  EXPECT_EQ((*row)->pool_hits, 0);  // new column, default
  EXPECT_EQ((*row)->provenance, kv::KvProvenance{});  // version 5: unknown
  EXPECT_TRUE((*row)->pinned);
  EXPECT_EQ((*catalog)->Children("ns", 5)->size(), 1u);
  // Deleting the row (the version-4 trigger) leaves nothing behind.
  const int64_t seven[] = {7};
  ASSERT_TRUE((*catalog)->Delete(seven).ok());
  EXPECT_FALSE((*catalog)->Find("ns", 11)->has_value());
  catalog->reset();

  auto db = SqliteDb::Open(path, {});
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*ReadCatalogSchemaVersion(*db), kCatalogSchemaVersion);
  // The keyword index of versions 1-3 is gone, its texts with it.
  EXPECT_EQ(*db->QueryInt64("SELECT COUNT(*) FROM sqlite_master WHERE name IN ('chunk_text', "
                            "'chunk_terms')"),
            0);
  EXPECT_EQ(*db->QueryInt64("SELECT COUNT(*) FROM meta WHERE key = 'num_texts'"), 0);
  EXPECT_EQ(*db->QueryInt64("SELECT COUNT(*) FROM sqlite_master WHERE name = 'chunks_by_parent'"),
            1);
  // The plan for Children uses the new index.
  auto plan = db->Prepare(
      "EXPLAIN QUERY PLAN SELECT row_id FROM chunks WHERE namespace = 'ns' "
      "AND parent_id = 5");
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(*plan->Step());
  EXPECT_NE(plan->ColumnText(3).find("chunks_by_parent"), std::string::npos) << plan->ColumnText(3);
}

// Rows written before schema version 3 hold no span fingerprints: Open indexes them, once.
TEST(CatalogMigrationTest, Version2RowsAreIndexedForSpansAtOpen) {
  testing_support::TempDir temp;
  const std::string path = temp.path() + "/catalog.db";
  std::vector<int32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1000 + 37 * i);
  {
    auto db = SqliteDb::Open(path, {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(MigrateCatalog(*db, 2).ok());
    std::string blob;
    for (int32_t t : tokens) {
      char hex[9];
      const uint32_t v = static_cast<uint32_t>(t);
      std::snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", v & 0xff, (v >> 8) & 0xff,
                    (v >> 16) & 0xff, v >> 24);
      blob += hex;
    }
    ASSERT_TRUE(db->Exec("INSERT INTO chunks (row_id, namespace, chunk_id, parent_id, "
                         "content_hash, exact, num_tokens, model_fingerprint, codec, file_name, "
                         "file_bytes, payload_checksum, pinned, created_us, last_access_us, "
                         "access_count, tokens) VALUES (9, 'ns', 12, 5, 99, 1, 40, 42, 0, "
                         "'b.rpkv', 123, 0, 0, 1, 2, 3, x'" + blob + "')")
                    .ok());
  }
  auto catalog = Catalog::Open(path);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  const std::vector<uint64_t> query = kv::SpanFingerprints(tokens);
  auto found = (*catalog)->SearchSpans("ns", query, 16, 8);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].row_id, 9);
  EXPECT_EQ((*found)[0].num_shared, static_cast<int>(query.size()));
  catalog->reset();
  auto db = SqliteDb::Open(path, {});
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*db->QueryInt64("SELECT value FROM meta WHERE key = 'spans_backfill_pending'"), 0);
  EXPECT_EQ(*db->QueryInt64("SELECT COUNT(*) FROM chunk_spans"),
            static_cast<int64_t>(query.size()));
}

TEST(CatalogMigrationTest, NewerSchemaIsRefused) {
  testing_support::TempDir temp;
  const std::string path = temp.path() + "/catalog.db";
  {
    auto catalog = Catalog::Open(path);
    ASSERT_TRUE(catalog.ok());
  }
  {
    auto db = SqliteDb::Open(path, {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'").ok());
  }
  EXPECT_EQ(Catalog::Open(path).status().code(), StatusCode::kUnimplemented);
}

TEST(CatalogMigrationTest, StepsAreNumberedInOrder) {
  const auto steps = CatalogMigrations();
  ASSERT_EQ(steps.size(), static_cast<size_t>(kCatalogSchemaVersion));
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].to_version, static_cast<int>(i + 1));
}

}  // namespace
}  // namespace reprise::store
