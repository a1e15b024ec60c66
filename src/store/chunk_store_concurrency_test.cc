// Two processes on one store: a writer and a second process that opens the store, runs gc
// and writes a little, side by side, round after round (separate processes, since flock
// locks belong to open file descriptions). Nothing the writer reported stored may be lost or
// wrong, the writer's persistence must never switch off, and after a final open no orphan or
// temporary file may remain. Built twice: 10 rounds with the unit tests, 100 with the `slow`
// label (REPRISE_CONCURRENCY_ROUNDS).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "store/chunk_store.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

#ifndef REPRISE_CONCURRENCY_ROUNDS
#define REPRISE_CONCURRENCY_ROUNDS 10
#endif

// CTest names must be unique across the two builds (their labels would merge otherwise).
#if REPRISE_CONCURRENCY_ROUNDS > 10
#define REPRISE_CONCURRENCY_TEST_NAME HundredRoundsOfWriterAndGcLoseNothing
#else
#define REPRISE_CONCURRENCY_TEST_NAME WriterAndGcInAnotherProcessLoseNothing
#endif

namespace reprise::store {
namespace {

constexpr uint64_t kFingerprint = 0xabc;
constexpr int kChunksPerRound = 12;

std::shared_ptr<const kv::ChunkEntry> ChunkFor(uint64_t seed) {
  test_util::TestShape shape;
  shape.num_tokens = 4 + static_cast<int>(seed % 13);
  return std::make_shared<const kv::ChunkEntry>(
      test_util::MakeTestChunk(seed, shape, kFingerprint, 0, "seed " + std::to_string(seed)));
}

StoreOptions Options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.model_fingerprint = kFingerprint;
  o.writeback_batch = 3;
  return o;
}

// The writer: inserts chunks in small groups, flushes, and reports each group on `out` once
// it is persisted ("OFF" if persistence switched off).
[[noreturn]] void Writer(const std::string& dir, int round, int out) {
  auto store = ChunkStore::Open(Options(dir));
  if (!store.ok()) _exit(3);
  auto ns = (*store)->OpenNamespace("writer");
  for (int i = 0; i < kChunksPerRound; i += 3) {
    std::string report;
    for (int j = i; j < i + 3; ++j) {
      const uint64_t seed = static_cast<uint64_t>(round) * 1000 + static_cast<uint64_t>(j);
      if (!ns->Insert(ChunkFor(seed)).ok()) _exit(4);
      report += std::to_string(seed) + "\n";
    }
    if (!(*store)->Flush().ok()) _exit(5);
    const StoreStats stats = (*store)->Stats();
    if (!stats.persistence_enabled) report = "OFF " + stats.persistence_error + "\n";
    if (::write(out, report.data(), report.size()) != static_cast<ssize_t>(report.size())) {
      _exit(6);
    }
    if (!stats.persistence_enabled) _exit(0);
  }
  store->reset();
  _exit(0);
}

// The second process: opens the store, runs gc, writes one chunk of its own, closes; thrice.
[[noreturn]] void Second(const std::string& dir, int round) {
  for (int i = 0; i < 3; ++i) {
    auto store = ChunkStore::Open(Options(dir));
    if (!store.ok()) _exit(3);
    if (!(*store)->Gc().ok()) _exit(4);
    const uint64_t seed = 500000 + static_cast<uint64_t>(round) * 10 + static_cast<uint64_t>(i);
    if (!(*store)->OpenNamespace("second")->Insert(ChunkFor(seed)).ok()) _exit(5);
    store->reset();
  }
  _exit(0);
}

TEST(ChunkStoreConcurrencyTest, REPRISE_CONCURRENCY_TEST_NAME) {
  testing_support::TempDir tmp;
  const std::string dir = tmp.path() + "/store";
  std::set<uint64_t> reported;
  for (int round = 0; round < REPRISE_CONCURRENCY_ROUNDS; ++round) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    std::fflush(nullptr);
    // Alternate who starts first, so that each side sometimes opens the store alone.
    pid_t writer = -1, second = -1;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == (round % 2 == 0)) {
        writer = ::fork();
        ASSERT_GE(writer, 0);
        if (writer == 0) {
          ::close(pipe_fds[0]);
          Writer(dir, round, pipe_fds[1]);
        }
      } else {
        second = ::fork();
        ASSERT_GE(second, 0);
        if (second == 0) Second(dir, round);
      }
    }
    ::close(pipe_fds[1]);
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(writer, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "round " << round << ": writer status " << status;
    ::waitpid(second, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "round " << round << ": second status " << status;
    ASSERT_EQ(text.find("OFF"), std::string::npos) << "round " << round << ": " << text;
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      reported.insert(std::stoull(text.substr(at, end - at)));
      at = end + 1;
    }
    EXPECT_EQ(reported.size(), static_cast<size_t>((round + 1) * kChunksPerRound));

    // Everything reported is there, exactly; nothing is left over.
    auto store = ChunkStore::Open(Options(dir));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto ns = (*store)->OpenNamespace("writer");
    for (const uint64_t seed : reported) {
      auto got = ns->Find(ChunkFor(seed)->id);
      ASSERT_NE(got, nullptr) << "round " << round << ": lost chunk of seed " << seed;
      EXPECT_TRUE(test_util::SameChunk(*got, *ChunkFor(seed))) << "round " << round;
    }
    auto rows = (*store)->List(std::nullopt);
    ASSERT_TRUE(rows.ok());
    std::set<std::string> files_with_rows;
    for (const CatalogRow& row : *rows) files_with_rows.insert(row.file_name);
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with("catalog.db") || name == "lock") continue;
      EXPECT_EQ(files_with_rows.count(name), 1u) << "round " << round << ": orphan " << name;
    }
    EXPECT_EQ((*store)->Stats().corrupt_dropped, 0);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace reprise::store
