// RecoverStore: rows without (intact-size) files and files without rows are removed, stray
// temporaries too; everything else in the folder is left alone.
#include "store/recovery.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "store/kv_file.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

constexpr uint64_t kFingerprint = 99;

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = NewPosixFileSystem();
    dir_ = temp_.path();
    auto catalog = Catalog::Open(dir_ + "/" + std::string(kCatalogFileName));
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
  }

  // Writes the chunk's file and, when `with_row`, its row (the store's order).
  kv::ChunkEntry Put(uint64_t seed, bool with_row) {
    kv::ChunkEntry entry = test_util::MakeTestChunk(seed, {}, kFingerprint);
    const std::string name = KvFileName("ns", entry.id);
    auto info = WriteKvFile(*fs_, dir_, name, entry, KvCodec::kF16, kFingerprint);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    if (with_row) {
      CatalogRow row;
      row.name_space = "ns";
      row.chunk_id = entry.id;
      row.content_hash = entry.content;
      row.tokens = entry.tokens;
      row.model_fingerprint = kFingerprint;
      row.file_name = name;
      row.file_bytes = info.ok() ? info->file_bytes : 0;
      EXPECT_TRUE(catalog_->Insert(row).ok());
    }
    return entry;
  }

  std::vector<std::string> Files() {
    auto names = fs_->ListDir(dir_);
    EXPECT_TRUE(names.ok());
    std::vector<std::string> out = names.value_or(std::vector<std::string>{});
    std::sort(out.begin(), out.end());
    return out;
  }

  testing_support::TempDir temp_;
  std::unique_ptr<FileSystem> fs_;
  std::string dir_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(RecoveryTest, CleanStoreIsUntouched) {
  Put(1, true);
  Put(2, true);
  const auto before = Files();
  auto report = RecoverStore(*fs_, *catalog_, dir_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->num_rows_checked, 2);
  EXPECT_EQ(report->num_rows_missing_file + report->num_rows_size_mismatch +
                report->num_orphan_files_removed + report->num_temp_files_removed,
            0);
  EXPECT_EQ(Files(), before);
  EXPECT_EQ(catalog_->Stats()->num_chunks, 2);
}

TEST_F(RecoveryTest, RemovesOrphansBothWays) {
  const kv::ChunkEntry kept = Put(1, true);
  const kv::ChunkEntry orphan_file = Put(2, false);  // file, no row
  const kv::ChunkEntry orphan_row = Put(3, true);    // row, file removed below
  const kv::ChunkEntry wrong_size = Put(4, true);    // file replaced by a shorter one
  ASSERT_TRUE(fs_->Remove(dir_ + "/" + KvFileName("ns", orphan_row.id)).ok());
  const std::vector<uint8_t> stub = {1, 2, 3};
  ASSERT_TRUE(fs_->WriteFile(dir_ + "/" + KvFileName("ns", wrong_size.id), stub, false).ok());
  ASSERT_TRUE(fs_->WriteFile(dir_ + "/x.rpkv.tmp", stub, false).ok());  // stray temporary
  ASSERT_TRUE(fs_->WriteFile(dir_ + "/notes.txt", stub, false).ok());   // not ours

  auto report = RecoverStore(*fs_, *catalog_, dir_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->num_rows_checked, 3);
  EXPECT_EQ(report->num_rows_missing_file, 1);
  EXPECT_EQ(report->num_rows_size_mismatch, 1);
  EXPECT_EQ(report->num_orphan_files_removed, 1);
  EXPECT_EQ(report->num_temp_files_removed, 1);
  EXPECT_GT(report->bytes_removed, 0);

  auto rows = catalog_->ListRows(std::nullopt);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().chunk_id, kept.id);
  std::vector<std::string> expected = {KvFileName("ns", kept.id), "catalog.db", "notes.txt"};
  std::vector<std::string> files = Files();
  // The catalog's WAL files come and go; only ours matter.
  files.erase(
      std::remove_if(files.begin(), files.end(),
                     [](const std::string& name) { return name.rfind("catalog.db-", 0) == 0; }),
      files.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(files, expected);
  EXPECT_TRUE(ReadKvFile(*fs_, dir_ + "/" + KvFileName("ns", kept.id), kFingerprint, kept.id).ok());

  // A second run finds nothing to do.
  auto again = RecoverStore(*fs_, *catalog_, dir_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->num_orphan_files_removed + again->num_rows_missing_file, 0);
}

TEST_F(RecoveryTest, MissingFolderIsAnError) {
  EXPECT_EQ(RecoverStore(*fs_, *catalog_, dir_ + "/none").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reprise::store
