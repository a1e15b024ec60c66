// Crash harness: child processes write, evict, compact, gc and clear a store while the parent
// kills them with SIGKILL at random moments — sometimes two processes on the store at once.
// After every kill the parent "restarts": the store must open, every chunk it serves must be
// exactly what was stored, and no orphan or temporary file may remain. It ends with one
// summary line (kills, restarts, chunks served, wrong chunks, orphans after open).
//
// Built three times: a short run with the unit tests, 120 kills with the `slow` label and
// 1000 kills with the `soak` label (REPRISE_CRASH_KILLS); the latter two are outside CI, and
// the soak runs only with REPRISE_SOAK=1 in the environment (REPRISE_SOAK=1 ctest -L soak).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "base/random.h"
#include "store/chunk_store.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

#ifndef REPRISE_CRASH_KILLS
#define REPRISE_CRASH_KILLS 12
#endif

// CTest names must be unique across the three builds (their labels would merge otherwise).
#if REPRISE_CRASH_KILLS >= 1000
#define REPRISE_CRASH_TEST_NAME SoakOf1000SigkillsNeverLosesConsistency
#elif REPRISE_CRASH_KILLS > 12
#define REPRISE_CRASH_TEST_NAME ManySigkillsNeverLoseConsistency
#else
#define REPRISE_CRASH_TEST_NAME SigkillAtRandomPointsNeverLosesConsistency
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

// A child: endless writes, flushes, lookups, evictions (through the budgets), gc with
// compaction (Gc optimizes the catalog) and clears. `gc_heavy` runs gc far more often (the
// second process of a pair).
[[noreturn]] void Churn(const std::string& dir, uint64_t seed, bool gc_heavy) {
  Random random(seed);
  Result<std::unique_ptr<ChunkStore>> store = ChunkStore::Open(Options(dir));
  if (!store.ok()) _exit(3);
  auto ns = (*store)->OpenNamespace("ns" + std::to_string(seed % 2));
  for (uint64_t i = 0;; ++i) {
    const uint64_t chunk_seed = random.NextBelow(1000);
    if (!ns->Insert(ChunkFor(chunk_seed)).ok()) _exit(4);
    const uint64_t action = random.NextBelow(gc_heavy ? 4 : 20);
    if (action == 0) (*store)->Flush().IgnoreError();
    if (action == 1) (void)(*store)->Gc();
    if (action == 2) (void)ns->Find(ChunkFor(random.NextBelow(1000))->id);
    if (action == 3 && i % 7 == 0) (*store)->Clear(std::string("ns1")).IgnoreError();
  }
}

struct Tally {
  int64_t kills = 0, restarts = 0, chunks_served = 0, wrong_chunks = 0, orphans = 0;
  int64_t corrupt_dropped = 0, open_failures = 0, catalog_rebuilds = 0;
};

// The restart: opens the store and checks every row and file.
void CheckStore(const std::string& dir, int iteration, Tally* tally) {
  Result<std::unique_ptr<ChunkStore>> opened = ChunkStore::Open(Options(dir));
  ++tally->restarts;
  if (!opened.ok()) {
    ++tally->open_failures;
    ADD_FAILURE() << "iteration " << iteration << ": " << opened.status().ToString();
    return;
  }
  ChunkStore& store = **opened;
  auto rows = std::move(store.List(std::nullopt)).value();
  std::set<std::string> files_with_rows;
  for (const CatalogRow& row : rows) {
    files_with_rows.insert(row.file_name);
    auto entry = store.OpenNamespace(row.name_space)->Find(row.chunk_id);
    if (entry == nullptr) {
      ++tally->wrong_chunks;
      ADD_FAILURE() << "iteration " << iteration << ": row without a valid file " << row.file_name;
      continue;
    }
    ++tally->chunks_served;
    const uint64_t seed = std::stoull(entry->text.substr(5));
    if (!test_util::SameChunk(*entry, *ChunkFor(seed))) {
      ++tally->wrong_chunks;
      ADD_FAILURE() << "iteration " << iteration << ": chunk differs from what was stored";
    }
  }
  // No orphans: every KV file has its row, no temporaries are left.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("catalog.db") || name == "lock") continue;
    if (files_with_rows.count(name) == 0) {
      ++tally->orphans;
      ADD_FAILURE() << "iteration " << iteration << ": orphan file " << name;
    }
  }
  tally->corrupt_dropped = store.Stats().corrupt_dropped;
  tally->catalog_rebuilds = store.Stats().catalog_rebuilds;  // the catalog is never damaged
}

pid_t Spawn(const std::string& dir, uint64_t seed, bool gc_heavy) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) Churn(dir, seed, gc_heavy);
  return child;
}

// Kills `child` and counts it; false when it had ended by itself.
bool KillAndReap(pid_t child, Tally* tally) {
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    ++tally->kills;
    return true;
  }
  ADD_FAILURE() << "a child ended by itself: status " << status;
  return false;
}

TEST(ChunkStoreCrashTest, REPRISE_CRASH_TEST_NAME) {
  // The soak build takes minutes: only on request, so that a plain `ctest` (scripts/test.sh
  // excludes only fuzz) stays quick.
  if (REPRISE_CRASH_KILLS > 120 && std::getenv("REPRISE_SOAK") == nullptr) {
    GTEST_SKIP() << "the 1000-kill soak runs with REPRISE_SOAK=1 (ctest -L soak)";
  }
  testing_support::TempDir tmp;
  const std::string dir = tmp.path() + "/store";
  Random random(77);
  Tally tally;
  for (int iteration = 0; tally.kills < REPRISE_CRASH_KILLS; ++iteration) {
    const uint64_t seed = static_cast<uint64_t>(iteration) + 1;
    const pid_t first = Spawn(dir, seed, false);
    ASSERT_GE(first, 0);
    // Every third time a second process shares the store (and dies at its own moment).
    pid_t second = -1;
    if (iteration % 3 == 2 && tally.kills + 1 < REPRISE_CRASH_KILLS) {
      ::usleep(static_cast<useconds_t>(random.NextBelow(20000)));
      second = Spawn(dir, seed + 100000, true);
      ASSERT_GE(second, 0);
    }
    ::usleep(static_cast<useconds_t>(5000 + random.NextBelow(60000)));
    if (!KillAndReap(first, &tally)) break;
    if (second > 0) {
      ::usleep(static_cast<useconds_t>(random.NextBelow(20000)));
      if (!KillAndReap(second, &tally)) break;
    }
    CheckStore(dir, iteration, &tally);
    if (tally.open_failures > 0 || tally.wrong_chunks > 10 || tally.orphans > 10) break;
  }
  std::printf(
      "crash harness: kills %lld, restarts %lld, chunks served %lld, wrong chunks %lld, "
      "orphans after open %lld, corrupt dropped %lld, catalog rebuilds %lld\n",
      static_cast<long long>(tally.kills), static_cast<long long>(tally.restarts),
      static_cast<long long>(tally.chunks_served), static_cast<long long>(tally.wrong_chunks),
      static_cast<long long>(tally.orphans), static_cast<long long>(tally.corrupt_dropped),
      static_cast<long long>(tally.catalog_rebuilds));
  EXPECT_EQ(tally.kills, REPRISE_CRASH_KILLS);
  EXPECT_EQ(tally.wrong_chunks, 0);
  EXPECT_EQ(tally.orphans, 0);
  EXPECT_EQ(tally.corrupt_dropped, 0);
  EXPECT_EQ(tally.catalog_rebuilds, 0);
}

}  // namespace
}  // namespace reprise::store
