#include "graph/subgraph_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "base/random.h"

namespace reprise::graph {
namespace {

// What a run saw: the order subgraphs started and finished in, checked against the DAG.
struct Trace {
  std::mutex mutex;
  std::vector<std::vector<int>> finished;  // [chunk][shard] = 1 once done
  std::vector<int> running_shard;          // per chunk, -1 when none
  std::vector<int> worker_of;              // [chunk * shards + shard]
  int max_chunks_in_flight = 0;
  int max_concurrent = 0, concurrent = 0;
  std::vector<std::string> violations;

  Trace(int chunks, int shards)
      : finished(chunks, std::vector<int>(shards, 0)),
        running_shard(chunks, -1),
        worker_of(chunks * shards, -1) {}

  void Start(const Subgraph& g, int worker, int shards) {
    std::lock_guard<std::mutex> lock(mutex);
    if (g.shard > 0 && !finished[g.chunk][g.shard - 1]) violations.push_back("shard order");
    if (g.chunk > 0 && !finished[g.chunk - 1][g.shard]) violations.push_back("chunk order");
    if (running_shard[g.chunk] != -1) violations.push_back("two shards of one chunk");
    running_shard[g.chunk] = g.shard;
    worker_of[g.chunk * shards + g.shard] = worker;
    int in_flight = 0;
    for (size_t c = 0; c < finished.size(); ++c) {
      const bool started = finished[c][0] || running_shard[c] != -1;
      const bool done = finished[c].back() != 0;
      in_flight += started && !done;
    }
    max_chunks_in_flight = std::max(max_chunks_in_flight, in_flight);
    max_concurrent = std::max(max_concurrent, ++concurrent);
  }
  void Finish(const Subgraph& g) {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished[g.chunk][g.shard]) violations.push_back("ran twice");
    finished[g.chunk][g.shard] = 1;
    running_shard[g.chunk] = -1;
    --concurrent;
  }
};

// Randomized timing: every subgraph runs once, after its dependencies, within the window;
// with several workers subgraphs do overlap.
TEST(SubgraphSchedulerTest, RespectsTheDagAndTheWindowUnderRandomTiming) {
  for (int trial = 0; trial < 20; ++trial) {
    Random rng(100 + trial);
    const int chunks = 1 + static_cast<int>(rng.NextDouble() * 7);
    const int shards = 1 + static_cast<int>(rng.NextDouble() * 5);
    SubgraphSchedulerOptions options;
    options.num_workers = 1 + trial % 4;
    options.window = 1 + trial % 3;
    Trace trace(chunks, shards);
    std::vector<int> delays_us(chunks * shards);
    for (int& d : delays_us) d = static_cast<int>(rng.NextDouble() * 400);
    const bool ok = RunOutOfOrder(chunks, shards, options, [&](const Subgraph& g, int worker) {
      trace.Start(g, worker, shards);
      std::this_thread::sleep_for(std::chrono::microseconds(delays_us[g.chunk * shards + g.shard]));
      trace.Finish(g);
      return true;
    });
    ASSERT_TRUE(ok);
    EXPECT_TRUE(trace.violations.empty()) << trace.violations.front();
    for (const auto& chunk : trace.finished) {
      for (int done : chunk) EXPECT_EQ(done, 1);
    }
    EXPECT_LE(trace.max_chunks_in_flight, options.window);
    EXPECT_LE(trace.max_concurrent, options.num_workers);
  }
}

// Two workers, many chunks and shards, a window of 2: the wavefront runs two subgraphs at once.
TEST(SubgraphSchedulerTest, TwoWorkersOverlapNeighbouringChunks) {
  Trace trace(6, 4);
  SubgraphSchedulerOptions options;
  options.num_workers = 2;
  options.window = 2;
  ASSERT_TRUE(RunOutOfOrder(6, 4, options, [&](const Subgraph& g, int worker) {
    trace.Start(g, worker, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    trace.Finish(g);
    return true;
  }));
  EXPECT_TRUE(trace.violations.empty());
  EXPECT_EQ(trace.max_concurrent, 2);
  EXPECT_EQ(trace.max_chunks_in_flight, 2);
}

// A worker that declines subgraphs (an accelerator taking only some shards) never gets them.
TEST(SubgraphSchedulerTest, WorkersOnlyRunWhatTheyAccept) {
  Trace trace(5, 4);
  SubgraphSchedulerOptions options;
  options.num_workers = 2;
  options.window = 3;
  options.accepts = [](int worker, const Subgraph& g) {
    return (g.shard % 2 == 1) == (worker == 1);
  };
  ASSERT_TRUE(RunOutOfOrder(5, 4, options, [&](const Subgraph& g, int worker) {
    trace.Start(g, worker, 4);
    trace.Finish(g);
    return true;
  }));
  EXPECT_TRUE(trace.violations.empty());
  for (int c = 0; c < 5; ++c) {
    for (int s = 0; s < 4; ++s) EXPECT_EQ(trace.worker_of[c * 4 + s], s % 2) << c << "," << s;
  }
}

// A failing subgraph stops the run: nothing after it starts, and the result says so.
TEST(SubgraphSchedulerTest, AFailureStopsStartingNewSubgraphs) {
  std::atomic<int> ran{0};
  SubgraphSchedulerOptions options;
  options.num_workers = 3;
  options.window = 2;
  const bool ok = RunOutOfOrder(10, 3, options, [&](const Subgraph& g, int) {
    ++ran;
    return !(g.chunk == 2 && g.shard == 1);
  });
  EXPECT_FALSE(ok);
  EXPECT_LT(ran.load(), 30);
  // Empty problems run nothing and succeed.
  EXPECT_TRUE(RunOutOfOrder(0, 3, options, [](const Subgraph&, int) { return false; }));
}

}  // namespace
}  // namespace reprise::graph
