// ChunkStore hardening (issue 12): damaged catalogs and rows, read-only folders, the
// persisted corrupt counter, folder and file permissions, a folder in place of a chunk file,
// and namespace names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "store/chunk_store.h"
#include "store/immutable_dir_for_test.h"
#include "store/kv_file.h"
#include "store/namespace_name.h"
#include "store/sqlite_db.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::SameChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x5678;

std::shared_ptr<const kv::ChunkEntry> Chunk(uint64_t seed, kv::ChunkId parent = 0,
                                            std::string text = "", int tokens = 4) {
  return std::make_shared<const kv::ChunkEntry>(MakeTestChunk(
      seed, TestShape{.num_tokens = tokens}, kFingerprint, parent, std::move(text)));
}

StoreOptions Options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir + "/store";
  o.model_fingerprint = kFingerprint;
  return o;
}

std::string CatalogPath(const StoreOptions& o) {
  return o.dir + "/" + std::string(kCatalogFileName);
}

std::vector<std::string> KvFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().ends_with(".rpkv") || e.path().string().ends_with(".tmp")) {
      out.push_back(e.path().filename().string());
    }
  }
  return out;
}

unsigned ModeOf(const std::string& path) {
  struct stat info;
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

std::unique_ptr<ChunkStore> OpenOrDie(const StoreOptions& options) {
  auto store = ChunkStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// Three chunks in two namespaces, with text; b is a's child.
struct ThreeChunks {
  std::shared_ptr<const kv::ChunkEntry> a = Chunk(2, 0, "alpha beta");
  std::shared_ptr<const kv::ChunkEntry> b = Chunk(4, a->id, "gamma delta", 40);
  std::shared_ptr<const kv::ChunkEntry> c = Chunk(6, 0, "epsilon");

  void Write(const StoreOptions& options) {
    auto store = OpenOrDie(options);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->OpenNamespace("app")->Insert(a).ok());
    ASSERT_TRUE(store->OpenNamespace("app")->Insert(b).ok());
    ASSERT_TRUE(store->OpenNamespace("other")->Insert(c).ok());
    ASSERT_TRUE(store->Flush().ok());
    ASSERT_EQ(store->Stats().chunks, 3);
  }

  void ExpectServed(ChunkStore& store) {
    auto app = store.OpenNamespace("app");
    for (const auto& e : {a, b}) {
      auto got = app->Find(e->id);
      ASSERT_NE(got, nullptr);
      EXPECT_TRUE(SameChunk(*got, *e));
    }
    auto got = store.OpenNamespace("other")->Find(c->id);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(SameChunk(*got, *c));
    EXPECT_EQ(store.OpenNamespace("other")->Find(a->id), nullptr);
    auto children = app->Children(a->id);
    ASSERT_EQ(children.size(), 1u);
    EXPECT_EQ(children[0]->id, b->id);
    auto candidates = app->FindCandidates(b->tokens, "", 4);
    ASSERT_FALSE(candidates.empty());
    EXPECT_EQ(candidates[0].id, b->id);
  }
};

// --- 1. A bad row, a damaged catalog --------------------------------------------------------

TEST(ChunkStoreHardeningTest, UnreadableRowIsDroppedWithItsFileAndTheRestIsServed) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  {
    auto db = SqliteDb::Open(CatalogPath(options), {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE chunks SET codec = 9 WHERE chunk_id = " +
                         std::to_string(static_cast<int64_t>(chunks.c->id)))
                    .ok());
  }
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->OpenNamespace("other")->Find(chunks.c->id), nullptr);
  auto app = store->OpenNamespace("app");
  for (const auto& e : {chunks.a, chunks.b}) {
    auto got = app->Find(e->id);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(SameChunk(*got, *e));
  }
  StoreStats stats = store->Stats();
  EXPECT_EQ(stats.chunks, 2);
  EXPECT_EQ(stats.bad_rows_dropped, 1);
  EXPECT_EQ(stats.corrupt_dropped, 1);
  EXPECT_TRUE(stats.persistence_enabled) << stats.persistence_error;
  EXPECT_EQ(KvFiles(options.dir).size(), 2u);  // the bad row's file went with it
  auto gc = store->Gc();
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  ASSERT_TRUE(store->OpenNamespace("other")->Insert(chunks.c).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().chunks, 3);
}

void DamageCatalog(const std::string& path, const std::string& how) {
  if (how == "garbage") {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 131 + 7) & 0xff));
  } else if (how == "truncated") {
    std::filesystem::resize_file(path, 4096 * 2);
  } else if (how == "not a database") {
    std::ofstream(path, std::ios::trunc) << std::string(2000, 'x') << "\nnot a database\n";
  } else if (how == "emptied") {
    std::filesystem::resize_file(path, 0);
  } else if (how == "deleted") {
    std::filesystem::remove(path);
  }
}

TEST(ChunkStoreHardeningTest, DamagedCatalogIsSetAsideAndRebuiltFromTheKvFiles) {
  for (const std::string how : {"garbage", "truncated", "not a database", "emptied", "deleted"}) {
    SCOPED_TRACE(how);
    testing_support::TempDir dir;
    const StoreOptions options = Options(dir.path());
    ThreeChunks chunks;
    chunks.Write(options);
    ASSERT_GT(std::filesystem::file_size(CatalogPath(options)), 4096u * 2);
    DamageCatalog(CatalogPath(options), how);
    const bool set_aside = how != "emptied" && how != "deleted";
    if (set_aside) {
      // Opened read-only (the cache commands that only read), the damage is an error, not
      // an empty store, and nothing is changed.
      StoreOptions read_only = options;
      read_only.read_only = true;
      auto opened = ChunkStore::Open(read_only);
      ASSERT_FALSE(opened.ok());
      EXPECT_EQ(opened.status().code(), StatusCode::kCorrupt) << opened.status().ToString();
      EXPECT_TRUE(std::filesystem::exists(CatalogPath(options)));
      EXPECT_EQ(KvFiles(options.dir).size(), 3u);
    }
    {
      auto store = OpenOrDie(options);
      ASSERT_NE(store, nullptr);
      const StoreStats stats = store->Stats();
      EXPECT_TRUE(stats.catalog_rebuilt);
      EXPECT_EQ(stats.rows_restored, 3);
      EXPECT_EQ(stats.chunks, 3);
      EXPECT_EQ(stats.catalog_rebuilds, 1);
      EXPECT_TRUE(stats.persistence_enabled) << stats.persistence_error;
      EXPECT_TRUE(stats.catalog_error.empty()) << stats.catalog_error;
      EXPECT_EQ(stats.catalog_set_aside.empty(), !set_aside) << stats.catalog_set_aside;
      if (set_aside) {
        EXPECT_TRUE(stats.catalog_set_aside.starts_with("catalog.db.corrupt-"));
        EXPECT_TRUE(std::filesystem::exists(options.dir + "/" + stats.catalog_set_aside));
      }
      chunks.ExpectServed(*store);
      EXPECT_EQ(KvFiles(options.dir).size(), 3u);
    }
    auto reopened = OpenOrDie(options);
    ASSERT_NE(reopened, nullptr);
    EXPECT_FALSE(reopened->Stats().catalog_rebuilt);
    EXPECT_EQ(reopened->Stats().chunks, 3);
    chunks.ExpectServed(*reopened);
  }
}

TEST(ChunkStoreHardeningTest, RebuildDropsOldFormatAndCorruptFiles) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  auto fs = NewPosixFileSystem();
  // A version 1 file has no namespace: it cannot be attributed. A broken header is corrupt.
  auto old = Chunk(8);
  auto bytes = SerializeKvFile(*old, KvCodec::kF16, kFingerprint);
  ASSERT_TRUE(bytes.ok());
  (*bytes)[4] = 1;  // claims version 1 but has the namespace field: fails its checks
  ASSERT_TRUE(fs->WriteFile(options.dir + "/" + KvFileName("app", old->id), *bytes, false).ok());
  DamageCatalog(CatalogPath(options), "garbage");
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.rows_restored, 3);
  EXPECT_EQ(stats.corrupt_dropped, 1);
  EXPECT_EQ(KvFiles(options.dir).size(), 3u);
  chunks.ExpectServed(*store);
}

// --- 2. Read-only folder --------------------------------------------------------------------

TEST(ChunkStoreHardeningTest, StoreInAnUnwritableFolderIsServedFromFlash) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  test_util::ImmutableDirForTest immutable(options.dir);
  if (!immutable.is_active()) GTEST_SKIP() << "chattr +i is not available here";
  for (const bool read_only_option : {false, true}) {
    SCOPED_TRACE(read_only_option ? "options.read_only" : "writable options");
    StoreOptions o = options;
    o.read_only = read_only_option;
    auto store = OpenOrDie(o);
    ASSERT_NE(store, nullptr);
    StoreStats stats = store->Stats();
    EXPECT_FALSE(stats.persistence_enabled);
    EXPECT_EQ(stats.chunks, 3);
    chunks.ExpectServed(*store);
    EXPECT_EQ(store->Stats().hits_flash, 3);
    // New chunks are served from memory.
    auto d = Chunk(10);
    ASSERT_TRUE(store->OpenNamespace("app")->Insert(d).ok());
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(store->OpenNamespace("app")->Find(d->id), d);
    EXPECT_EQ(store->Stats().chunks, 3);
  }
  immutable.Release();
  EXPECT_EQ(KvFiles(options.dir).size(), 3u);
}

// A small tmpfs for a full disk (root only; is_active() is false where mounting is not
// allowed, and the test skips).
class SmallDiskForTest {
 public:
  explicit SmallDiskForTest(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    active_ =
        std::system(
            ("mount -t tmpfs -o size=512k,mode=0700 tmpfs '" + dir_ + "' 2>/dev/null").c_str()) ==
        0;
  }
  ~SmallDiskForTest() {
    if (active_) (void)std::system(("umount '" + dir_ + "' 2>/dev/null").c_str());
  }
  bool is_active() const { return active_; }
  // Writes a filler file until the disk is full.
  void Fill() {
    std::FILE* f = std::fopen((dir_ + "/filler").c_str(), "wb");
    if (f == nullptr) return;
    const std::string block(4096, 'f');
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
    }
    std::fclose(f);
  }

 private:
  std::string dir_;
  bool active_ = false;
};

TEST(ChunkStoreHardeningTest, StoreOnAFullDiskIsServedFromFlash) {
  testing_support::TempDir dir;
  SmallDiskForTest disk(dir.path() + "/disk");
  if (!disk.is_active()) GTEST_SKIP() << "cannot mount a small tmpfs here";
  const StoreOptions options = Options(dir.path() + "/disk");
  ThreeChunks chunks;
  chunks.Write(options);
  ASSERT_FALSE(std::filesystem::exists(CatalogPath(options) + "-shm"));
  disk.Fill();
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.chunks, 3);
  chunks.ExpectServed(*store);
  EXPECT_EQ(store->Stats().hits_flash, 3);
  // Whatever the catalog could do on the full disk, new chunks are served from memory.
  auto d = Chunk(10);
  ASSERT_TRUE(store->OpenNamespace("app")->Insert(d).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->OpenNamespace("app")->Find(d->id), d);
}

TEST(ChunkStoreHardeningTest, DamagedCatalogInAnUnwritableFolderIsReportedNotHidden) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  DamageCatalog(CatalogPath(options), "garbage");
  test_util::ImmutableDirForTest immutable(options.dir);
  if (!immutable.is_active()) GTEST_SKIP() << "chattr +i is not available here";
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  const StoreStats stats = store->Stats();
  EXPECT_FALSE(stats.persistence_enabled);
  EXPECT_NE(stats.catalog_error.find("Corrupt"), std::string::npos) << stats.catalog_error;
  EXPECT_FALSE(stats.catalog_rebuilt);
  auto d = Chunk(10);
  ASSERT_TRUE(store->OpenNamespace("app")->Insert(d).ok());
  EXPECT_EQ(store->OpenNamespace("app")->Find(d->id), d);
}

// --- 3. corrupt_dropped survives restarts ---------------------------------------------------

TEST(ChunkStoreHardeningTest, CorruptCountIncludesDropsAtOpenAndSurvivesRestarts) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  const std::string victim = options.dir + "/" + KvFileName("app", chunks.a->id);
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) - 5);
  {
    auto store = OpenOrDie(options);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Stats().corrupt_dropped, 1);  // dropped at open (wrong size)
    EXPECT_EQ(store->Stats().chunks, 2);
  }
  {
    auto store = OpenOrDie(options);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Stats().corrupt_dropped, 1);  // persisted
    // One more, found on read (a flipped byte).
    const std::string path = options.dir + "/" + KvFileName("other", chunks.c->id);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kKvFileHeaderBytes) + 3);
    f.put('\x7f');
    f.close();
    EXPECT_EQ(store->OpenNamespace("other")->Find(chunks.c->id), nullptr);
    EXPECT_EQ(store->Stats().corrupt_dropped, 2);
  }
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Stats().corrupt_dropped, 2);
}

TEST(ChunkStoreHardeningTest, FileRemovedByAnotherProcessIsAMissNotCorruption) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  // Another process evicts a: its row first, then its file; we read the row before that.
  ASSERT_TRUE(std::filesystem::remove(options.dir + "/" + KvFileName("app", chunks.a->id)));
  EXPECT_EQ(store->OpenNamespace("app")->Find(chunks.a->id), nullptr);
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.corrupt_dropped, 0);
  EXPECT_EQ(stats.chunks, 2);  // the stale row went
  auto gc = store->Gc();
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->corrupt, 0);
}

// --- 4. Permissions -------------------------------------------------------------------------

TEST(ChunkStoreHardeningTest, FilesArePrivateAndAReadableFolderIsNarrowed) {
  testing_support::TempDir dir;
  StoreOptions options = Options(dir.path());
  ASSERT_EQ(::mkdir(options.dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(options.dir.c_str(), 0755), 0);
  // A catalog left readable by an older build.
  std::ofstream(CatalogPath(options)).close();
  ASSERT_EQ(::chmod(CatalogPath(options).c_str(), 0644), 0);
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Stats().dir_mode_fixed);
  ASSERT_TRUE(store->OpenNamespace("app")->Insert(Chunk(2, 0, "secret prompt")).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(ModeOf(options.dir), 0700u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(options.dir)) {
    EXPECT_EQ(ModeOf(e.path().string()), 0600u) << e.path();
    ++files;
  }
  EXPECT_GE(files, 4);  // catalog.db, -wal, -shm, lock, the chunk
  EXPECT_TRUE(std::filesystem::exists(CatalogPath(options) + "-wal"));
}

TEST(ChunkStoreHardeningTest, NewStoreFilesAreCreatedPrivate) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  const mode_t old_umask = ::umask(0);  // even with a permissive umask
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->OpenNamespace("app")->Insert(Chunk(2, 0, "secret prompt")).ok());
  ASSERT_TRUE(store->Flush().ok());
  ::umask(old_umask);
  EXPECT_EQ(ModeOf(options.dir), 0700u);
  for (const char* name : {"catalog.db", "catalog.db-wal", "catalog.db-shm", "lock"}) {
    EXPECT_EQ(ModeOf(options.dir + "/" + name), 0600u) << name;
  }
}

TEST(ChunkStoreHardeningTest, SymlinkedOrForeignStoreFolderIsRefused) {
  testing_support::TempDir dir;
  const std::string real = dir.path() + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  StoreOptions options = Options(dir.path());
  std::filesystem::create_directory_symlink(real, options.dir);
  auto linked = ChunkStore::Open(options);
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.status().code(), StatusCode::kInvalidArgument) << linked.status().ToString();
  EXPECT_NE(linked.status().ToString().find("symlink"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(real));  // nothing created through the link
  options.read_only = true;
  EXPECT_FALSE(ChunkStore::Open(options).ok());

  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  StoreOptions foreign = Options(dir.path() + "/real");
  ASSERT_EQ(::mkdir(foreign.dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(foreign.dir.c_str(), 12345, 12345), 0);
  auto opened = ChunkStore::Open(foreign);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable) << opened.status().ToString();
  EXPECT_NE(opened.status().ToString().find("12345"), std::string::npos);
}

// --- 5. Several processes: the lock --------------------------------------------------------

TEST(ChunkStoreHardeningTest, LeftoversAreDeletedOnlyWhenNoOtherOpenerExists) {
  // Two ChunkStores in one process hold the lock through two open file descriptions, which
  // exclude each other exactly as two processes do.
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  ThreeChunks chunks;
  chunks.Write(options);
  const std::string temp = options.dir + "/" + KvTempFileName(KvFileName("app", 77));
  const auto leave_leftover = [&] { std::ofstream(temp) << "half-written"; };
  auto first = OpenOrDie(options);
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(first->Stats().recovery_skipped);
  leave_leftover();
  {
    auto second = OpenOrDie(options);  // another opener: no recovery
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(second->Stats().recovery_skipped);
    EXPECT_TRUE(second->Stats().persistence_enabled);
    EXPECT_TRUE(std::filesystem::exists(temp));
    auto gc = first->Gc();
    ASSERT_TRUE(gc.ok()) << gc.status().ToString();
    EXPECT_TRUE(gc->recovery_skipped);
    EXPECT_TRUE(std::filesystem::exists(temp));
    chunks.ExpectServed(*second);
    // Both still write.
    ASSERT_TRUE(second->OpenNamespace("app")->Insert(Chunk(20)).ok());
    ASSERT_TRUE(second->Flush().ok());
    EXPECT_TRUE(second->Stats().persistence_enabled);
  }
  auto gc = first->Gc();  // alone again
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_FALSE(gc->recovery_skipped);
  EXPECT_EQ(gc->orphan_files, 1);
  EXPECT_FALSE(std::filesystem::exists(temp));
  ASSERT_TRUE(first->OpenNamespace("app")->Insert(Chunk(22)).ok());
  ASSERT_TRUE(first->Flush().ok());
  EXPECT_EQ(first->Stats().chunks, 5);
}

// --- 6. A folder in place of a chunk file; namespace names ----------------------------------

TEST(ChunkStoreHardeningTest, FolderInPlaceOfAChunkFileIsThatChunksMissOnly) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  auto a = Chunk(2), b = Chunk(4), c = Chunk(6);
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  auto ns = store->OpenNamespace("app");
  ASSERT_TRUE(ns->Insert(a).ok());
  ASSERT_TRUE(store->Flush().ok());
  ASSERT_TRUE(std::filesystem::create_directory(options.dir + "/" + KvFileName("app", b->id)));
  ASSERT_TRUE(ns->Insert(b).ok());
  ASSERT_TRUE(ns->Insert(c).ok());
  ASSERT_TRUE(store->Flush().ok());
  StoreStats stats = store->Stats();
  EXPECT_TRUE(stats.persistence_enabled) << stats.persistence_error;
  EXPECT_EQ(stats.chunks_not_persisted, 1);
  EXPECT_EQ(stats.chunks, 2);     // a and c
  EXPECT_EQ(ns->Find(b->id), b);  // still served from memory
  // The (empty) folder was cleared away: b persists the next time.
  ASSERT_TRUE(ns->Insert(b).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().chunks, 3);
  store.reset();

  // A folder where a chunk's file is at read time: a miss for that chunk only.
  const std::string c_path = options.dir + "/" + KvFileName("app", c->id);
  ASSERT_TRUE(std::filesystem::remove(c_path));
  ASSERT_TRUE(std::filesystem::create_directory(c_path));
  ASSERT_TRUE(std::filesystem::create_directory(c_path + "/inside"));  // not even removable
  auto reopened = OpenOrDie(options);
  ASSERT_NE(reopened, nullptr);
  auto ns2 = reopened->OpenNamespace("app");
  EXPECT_EQ(ns2->Find(c->id), nullptr);
  auto got = ns2->Find(a->id);
  ASSERT_NE(got, nullptr);
  EXPECT_TRUE(SameChunk(*got, *a));
  ASSERT_TRUE(ns2->Insert(Chunk(8)).ok());
  ASSERT_TRUE(reopened->Flush().ok());
  EXPECT_TRUE(reopened->Stats().persistence_enabled) << reopened->Stats().persistence_error;
}

TEST(ChunkStoreHardeningTest, NamespaceNamesAreValidatedOnInsertOnly) {
  testing_support::TempDir dir;
  const StoreOptions options = Options(dir.path());
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->OpenNamespace("bad\nname")->Insert(Chunk(2)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->OpenNamespace("")->Insert(Chunk(2)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->OpenNamespace(std::string(200, 'n'))->Insert(Chunk(2)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->OpenValidNamespace("\xff").status().code(), StatusCode::kInvalidArgument);
  auto valid = store->OpenValidNamespace("caf\xc3\xa9");
  ASSERT_TRUE(valid.ok());
  ASSERT_TRUE((*valid)->Insert(Chunk(2)).ok());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats().chunks, 1);
  store.reset();
  // A row whose name is no longer valid (written by an older build) stays listable and
  // clearable.
  {
    auto db = SqliteDb::Open(CatalogPath(options), {});
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE chunks SET namespace = 'old' || char(1) || 'name'").ok());
  }
  auto reopened = OpenOrDie(options);
  ASSERT_NE(reopened, nullptr);
  auto rows = reopened->List(std::nullopt);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name_space, std::string("old\x01name"));
  EXPECT_EQ(reopened->Namespaces()->size(), 1u);
  ASSERT_TRUE(reopened->Clear(std::string("old\x01name")).ok());
  EXPECT_EQ(reopened->Stats().chunks, 0);
}

}  // namespace
}  // namespace reprise::store
