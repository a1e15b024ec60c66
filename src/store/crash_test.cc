// Crash-style tests of the flash tier's write and delete protocols with the fault-injecting
// file system: a crash at every step, torn writes of every kind, a full disk and a read-only
// folder. After a crash the test "restarts": a fresh file system and catalog over the same
// folder, then RecoverStore. The invariant checked every time: every row names a complete,
// readable file with the right KV, no orphan or temporary file remains, and everything whose
// protocol finished before the crash survived.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "store/catalog.h"
#include "store/fault_injecting_file_system.h"
#include "store/kv_file.h"
#include "store/recovery.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

constexpr uint64_t kFingerprint = 7;
constexpr std::string_view kNamespace = "ns";

std::string CatalogPath(const std::string& dir) {
  return dir + "/" + std::string(kCatalogFileName);
}

// The folder's files, sorted, without SQLite's WAL and shared-memory files (which SQLite
// creates and removes on its own, also for read-only connections).
std::vector<std::string> StoreFiles(FileSystem& fs, const std::string& dir) {
  std::vector<std::string> names = fs.ListDir(dir).value_or(std::vector<std::string>{});
  names.erase(
      std::remove_if(names.begin(), names.end(),
                     [](const std::string& name) { return name.rfind("catalog.db-", 0) == 0; }),
      names.end());
  std::sort(names.begin(), names.end());
  return names;
}

// The store's write protocol: durable file first, then the row.
Status PutChunk(FileSystem& fs, Catalog& catalog, const std::string& dir,
                const kv::ChunkEntry& entry, KvCodec codec) {
  const std::string name = KvFileName(kNamespace, entry.id);
  REPRISE_ASSIGN_OR_RETURN(const KvFileInfo info,
                           WriteKvFile(fs, dir, name, entry, codec, kFingerprint));
  CatalogRow row;
  row.name_space = std::string(kNamespace);
  row.chunk_id = entry.id;
  row.parent_id = entry.parent;
  row.content_hash = entry.content;
  row.tokens = entry.tokens;
  row.model_fingerprint = kFingerprint;
  row.codec = info.codec;
  row.file_name = name;
  row.file_bytes = info.file_bytes;
  row.payload_checksum = info.payload_checksum;
  return catalog.Insert(row).status();
}

// The delete protocol: row first, then the file.
Status DeleteChunk(FileSystem& fs, Catalog& catalog, const std::string& dir, kv::ChunkId id) {
  REPRISE_ASSIGN_OR_RETURN(const std::optional<CatalogRow> row, catalog.Find(kNamespace, id));
  if (!row) return NotFoundError("no row");
  const int64_t ids[] = {row->row_id};
  REPRISE_RETURN_IF_ERROR(catalog.Delete(ids));
  REPRISE_RETURN_IF_ERROR(fs.Remove(dir + "/" + row->file_name));
  return fs.SyncDir(dir);
}

// Restarts over `dir`, recovers, and checks the invariant. Returns the chunk ids present.
std::set<kv::ChunkId> RestartAndCheck(const std::string& dir,
                                      const std::map<kv::ChunkId, kv::ChunkEntry>& known) {
  auto fs = NewPosixFileSystem();
  auto catalog = Catalog::Open(CatalogPath(dir));
  EXPECT_TRUE(catalog.ok()) << catalog.status().ToString();
  if (!catalog.ok()) return {};
  auto report = RecoverStore(*fs, **catalog, dir);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  std::set<kv::ChunkId> present;
  auto rows = (*catalog)->ListRows(std::nullopt);
  EXPECT_TRUE(rows.ok());
  std::set<std::string> row_files;
  for (const CatalogRow& row : rows.value_or(std::vector<CatalogRow>{})) {
    present.insert(row.chunk_id);
    row_files.insert(row.file_name);
    auto entry = ReadKvFile(*fs, dir + "/" + row.file_name, kFingerprint, row.chunk_id);
    EXPECT_TRUE(entry.ok()) << entry.status().ToString();
    const auto it = known.find(row.chunk_id);
    EXPECT_NE(it, known.end());
    if (entry.ok() && it != known.end()) {
      EXPECT_EQ(entry->tokens, it->second.tokens);
      EXPECT_EQ(entry->text, it->second.text);
      if (row.codec == KvCodec::kF16) {
        EXPECT_TRUE(test_util::SameChunk(*entry, it->second));
      }
    }
  }
  for (const std::string& name : fs->ListDir(dir).value_or(std::vector<std::string>{})) {
    if (name.rfind("catalog.db", 0) == 0) continue;
    EXPECT_TRUE(row_files.count(name) == 1) << "stray file " << name;
  }
  return present;
}

std::map<kv::ChunkId, kv::ChunkEntry> MakeChunks(int count) {
  std::map<kv::ChunkId, kv::ChunkEntry> chunks;
  kv::ChunkId parent = kv::kRootChunkId;
  for (int i = 0; i < count; ++i) {
    kv::ChunkEntry entry =
        test_util::MakeTestChunk(100 + static_cast<uint64_t>(i), {}, kFingerprint, parent,
                                 "chunk number " + std::to_string(i));
    parent = entry.id;
    chunks.emplace(entry.id, std::move(entry));
  }
  return chunks;
}

TEST(CrashTest, CrashAtEveryStepOfWritesAndDeletesLeavesAConsistentStore) {
  const auto chunks = MakeChunks(3);
  std::vector<kv::ChunkId> order;
  for (const auto& [id, entry] : chunks) order.push_back(id);
  // Script: put all three, delete the second, put it again. Count the mutating ops first.
  const auto run_script = [&](FileSystem& fs, Catalog& catalog, const std::string& dir,
                              std::set<kv::ChunkId>* done) -> Status {
    for (size_t i = 0; i < order.size(); ++i) {
      const KvCodec codec = i % 2 == 0 ? KvCodec::kF16 : KvCodec::kInt8;
      REPRISE_RETURN_IF_ERROR(PutChunk(fs, catalog, dir, chunks.at(order[i]), codec));
      done->insert(order[i]);
    }
    done->erase(order[1]);  // from here on, the second chunk may or may not be there
    REPRISE_RETURN_IF_ERROR(DeleteChunk(fs, catalog, dir, order[1]));
    REPRISE_RETURN_IF_ERROR(PutChunk(fs, catalog, dir, chunks.at(order[1]), KvCodec::kF16));
    done->insert(order[1]);
    return Status::Ok();
  };
  int64_t total_ops = 0;
  {
    testing_support::TempDir temp;
    auto base = NewPosixFileSystem();
    FaultInjectingFileSystem fs(base.get());
    auto catalog = Catalog::Open(CatalogPath(temp.path()));
    ASSERT_TRUE(catalog.ok());
    std::set<kv::ChunkId> done;
    ASSERT_TRUE(run_script(fs, **catalog, temp.path(), &done).ok());
    total_ops = fs.num_mutating_ops();
  }
  ASSERT_GE(total_ops, 14);
  for (int64_t crash_after = 0; crash_after <= total_ops; ++crash_after) {
    SCOPED_TRACE("crash after " + std::to_string(crash_after) + " ops");
    testing_support::TempDir temp;
    std::set<kv::ChunkId> done;
    {
      auto base = NewPosixFileSystem();
      FaultInjectingFileSystem fs(base.get());
      fs.CrashAfterOps(crash_after);
      auto catalog = Catalog::Open(CatalogPath(temp.path()));
      ASSERT_TRUE(catalog.ok());
      const Status status = run_script(fs, **catalog, temp.path(), &done);
      EXPECT_EQ(status.ok(), crash_after == total_ops) << status.ToString();
    }
    const std::set<kv::ChunkId> present = RestartAndCheck(temp.path(), chunks);
    for (const kv::ChunkId id : done) EXPECT_TRUE(present.count(id) == 1) << "lost " << id;
  }
}

TEST(CrashTest, TornWritesNeverLeaveARowOrAFile) {
  const auto chunks = MakeChunks(2);
  const kv::ChunkEntry& first = chunks.begin()->second;
  const kv::ChunkEntry& second = std::next(chunks.begin())->second;
  const size_t file_bytes = SerializeKvFile(second, KvCodec::kInt8, kFingerprint)->size();
  for (const size_t keep :
       {size_t{0}, size_t{1}, size_t{40}, kKvFileHeaderBytes - 1, kKvFileHeaderBytes,
        kKvFileHeaderBytes + 1, file_bytes / 2, file_bytes - 1, file_bytes}) {
    SCOPED_TRACE("keep " + std::to_string(keep));
    testing_support::TempDir temp;
    {
      auto base = NewPosixFileSystem();
      FaultInjectingFileSystem fs(base.get());
      auto catalog = Catalog::Open(CatalogPath(temp.path()));
      ASSERT_TRUE(catalog.ok());
      ASSERT_TRUE(PutChunk(fs, **catalog, temp.path(), first, KvCodec::kF16).ok());
      fs.TearNthWrite(1, keep);
      EXPECT_FALSE(PutChunk(fs, **catalog, temp.path(), second, KvCodec::kInt8).ok());
      EXPECT_TRUE(fs.crashed());
      // The torn bytes sit under the temporary name, never under the real one.
      auto files = base->ListDir(temp.path());
      ASSERT_TRUE(files.ok());
      EXPECT_EQ(std::count(files->begin(), files->end(), KvFileName(kNamespace, second.id)), 0);
    }
    const std::set<kv::ChunkId> present = RestartAndCheck(temp.path(), chunks);
    EXPECT_EQ(present, std::set<kv::ChunkId>{first.id});
  }
}

TEST(CrashTest, TornFileUnderItsRealNameReadsAsCorruptNotWrongKv) {
  // A file system that breaks its rename promise (or a disk that loses sectors) can still put
  // a short file under the real name; the reader must call it Corrupt.
  const auto chunks = MakeChunks(1);
  const kv::ChunkEntry& entry = chunks.begin()->second;
  testing_support::TempDir temp;
  auto fs = NewPosixFileSystem();
  const std::string name = KvFileName(kNamespace, entry.id);
  auto bytes = SerializeKvFile(entry, KvCodec::kF16, kFingerprint);
  ASSERT_TRUE(bytes.ok());
  for (size_t keep = 0; keep < bytes->size(); keep += 7) {
    ASSERT_TRUE(fs->WriteFile(temp.path() + "/" + name, std::span(*bytes).first(keep), false).ok());
    EXPECT_EQ(ReadKvFile(*fs, temp.path() + "/" + name, kFingerprint, entry.id).status().code(),
              StatusCode::kCorrupt);
  }
}

TEST(CrashTest, DiskFullKeepsExistingFilesAndReportsResourceExhausted) {
  const auto chunks = MakeChunks(4);
  std::vector<const kv::ChunkEntry*> entries;
  for (const auto& [id, entry] : chunks) entries.push_back(&entry);
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  auto catalog = Catalog::Open(CatalogPath(temp.path()));
  ASSERT_TRUE(catalog.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(PutChunk(fs, **catalog, temp.path(), *entries[i], KvCodec::kF16).ok());
  }
  const auto files_before = StoreFiles(*base, temp.path());
  fs.FailAllWrites(true);
  const Status full = PutChunk(fs, **catalog, temp.path(), *entries[3], KvCodec::kF16);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
  // Rewriting an existing chunk fails too, and leaves the old file as it was.
  EXPECT_EQ(WriteKvFile(fs, temp.path(), KvFileName(kNamespace, entries[0]->id), *entries[0],
                        KvCodec::kInt8, kFingerprint)
                .status()
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ((*catalog)->Stats()->num_chunks, 3);
  EXPECT_EQ(StoreFiles(*base, temp.path()), files_before);  // no temporary left behind
  for (int i = 0; i < 3; ++i) {
    auto read = ReadKvFile(fs, temp.path() + "/" + KvFileName(kNamespace, entries[i]->id),
                           kFingerprint, entries[i]->id);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_TRUE(test_util::SameChunk(*read, *entries[i]));
  }
  // Space comes back: the write succeeds.
  fs.FailAllWrites(false);
  EXPECT_TRUE(PutChunk(fs, **catalog, temp.path(), *entries[3], KvCodec::kF16).ok());
}

TEST(CrashTest, ReadOnlyFolderIsUnavailableAndNothingChanges) {
  const auto chunks = MakeChunks(2);
  const kv::ChunkEntry& first = chunks.begin()->second;
  const kv::ChunkEntry& second = std::next(chunks.begin())->second;
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  {
    auto catalog = Catalog::Open(CatalogPath(temp.path()));
    ASSERT_TRUE(catalog.ok());
    ASSERT_TRUE(PutChunk(fs, **catalog, temp.path(), first, KvCodec::kF16).ok());
  }
  const auto files_before = StoreFiles(*base, temp.path());
  fs.SetReadOnlyDir(temp.path());
  CatalogOptions read_only;
  read_only.read_only = true;
  auto catalog = Catalog::Open(CatalogPath(temp.path()), read_only);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  EXPECT_EQ(PutChunk(fs, **catalog, temp.path(), second, KvCodec::kF16).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(DeleteChunk(fs, **catalog, temp.path(), first.id).code(), StatusCode::kUnavailable);
  CatalogRow row;
  row.name_space = "ns";
  row.chunk_id = second.id;
  EXPECT_EQ((*catalog)->Insert(row).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(StoreFiles(*base, temp.path()), files_before);
  EXPECT_EQ((*catalog)->Stats()->num_chunks, 1);
  // Reads still work.
  auto read =
      ReadKvFile(fs, temp.path() + "/" + KvFileName(kNamespace, first.id), kFingerprint, first.id);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(test_util::SameChunk(*read, first));
}

}  // namespace
}  // namespace reprise::store
