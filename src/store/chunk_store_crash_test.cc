// Crash harness: a child process writes, evicts and compacts a store while the parent kills it
// with SIGKILL at random moments; after every kill the store must open, every chunk it serves
// must be exactly what was stored, and no orphan file may remain. Built twice: a short run in
// the unit tests and a 120-kill run with the `slow` label (REPRISE_CRASH_KILLS).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "base/random.h"
#include "store/chunk_store.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

#ifndef REPRISE_CRASH_KILLS
#define REPRISE_CRASH_KILLS 12
#endif

namespace reprise::store {
namespace {

constexpr uint64_t kFingerprint = 0xfeed;

std::shared_ptr<const kv::ChunkEntry> ChunkFor(uint64_t seed) {
  test_util::TestShape shape;
  shape.num_tokens = 8 + static_cast<int>(seed % 24);
  return std::make_shared<const kv::ChunkEntry>(
      test_util::MakeTestChunk(seed, shape, kFingerprint, 0, "seed " + std::to_string(seed)));
}

StoreOptions Options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.model_fingerprint = kFingerprint;
  o.pool_bytes = 64 << 10;   // small: the pool evicts all the time
  o.disk_bytes = 256 << 10;  // small: the flash tier evicts all the time
  o.writeback_batch = 4;
  return o;
}

// The child: endless writes, flushes, evictions (through the budgets), compaction and clears.
[[noreturn]] void Churn(const std::string& dir, uint64_t seed) {
  Random random(seed);
  Result<std::unique_ptr<ChunkStore>> store = ChunkStore::Open(Options(dir));
  if (!store.ok()) _exit(3);
  auto ns = (*store)->OpenNamespace("ns" + std::to_string(seed % 2));
  for (uint64_t i = 0;; ++i) {
    const uint64_t chunk_seed = random.NextBelow(1000);
    if (!ns->Insert(ChunkFor(chunk_seed)).ok()) _exit(4);
    const uint64_t action = random.NextBelow(20);
    if (action == 0) (*store)->Flush().IgnoreError();
    if (action == 1) (void)(*store)->Gc();
    if (action == 2) (void)ns->Find(ChunkFor(random.NextBelow(1000))->id);
    if (action == 3 && i % 7 == 0) (*store)->Clear(std::string("ns1")).IgnoreError();
  }
}

void CheckStore(const std::string& dir, int kill) {
  Result<std::unique_ptr<ChunkStore>> opened = ChunkStore::Open(Options(dir));
  ASSERT_TRUE(opened.ok()) << "kill " << kill << ": " << opened.error().ToString();
  ChunkStore& store = **opened;
  auto rows = std::move(store.List(std::nullopt)).value();
  std::set<std::string> files_with_rows;
  for (const CatalogRow& row : rows) {
    files_with_rows.insert(row.file_name);
    auto entry = store.OpenNamespace(row.name_space)->Find(row.chunk_id);
    ASSERT_NE(entry, nullptr) << "kill " << kill << ": row without a valid file " << row.file_name;
    const uint64_t seed = std::stoull(entry->text.substr(5));
    EXPECT_TRUE(test_util::SameChunk(*entry, *ChunkFor(seed)))
        << "kill " << kill << ": chunk differs from what was stored";
  }
  // No orphans: every KV file has its row, no temporaries are left.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("catalog.db") || name == "lock") continue;
    EXPECT_TRUE(files_with_rows.count(name)) << "kill " << kill << ": orphan file " << name;
  }
  EXPECT_EQ(store.Stats().corrupt_dropped, 0) << "kill " << kill;
}

TEST(ChunkStoreCrashTest, SigkillAtRandomPointsNeverLosesConsistency) {
  testing_support::TempDir tmp;
  const std::string dir = tmp.path() + "/store";
  Random random(77);
  int kills = 0;
  for (int iteration = 0; iteration < REPRISE_CRASH_KILLS; ++iteration) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) Churn(dir, static_cast<uint64_t>(iteration) + 1);
    ::usleep(static_cast<useconds_t>(5000 + random.NextBelow(60000)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++kills;
    else ADD_FAILURE() << "the child ended by itself: status " << status;
    CheckStore(dir, iteration);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(kills, REPRISE_CRASH_KILLS);
}

}  // namespace
}  // namespace reprise::store
