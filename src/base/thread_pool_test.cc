#include "base/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace reprise {
namespace {

std::unique_ptr<ThreadPool> MakePool(int num_threads, int spin_us = 200) {
  auto pool = ThreadPool::Create({.num_threads = num_threads, .spin_us = spin_us});
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(pool).value();
}

TEST(ThreadPoolTest, RejectsBadOptions) {
  EXPECT_FALSE(ThreadPool::Create({.num_threads = -1}).ok());
  EXPECT_FALSE(ThreadPool::Create({.num_threads = 2, .spin_us = -5}).ok());
}

TEST(ThreadPoolTest, DefaultSizeIsAtLeastOne) {
  auto pool = MakePool(0);
  EXPECT_GE(pool->num_threads(), 1);
}

// thread_start runs on the creating thread and on every worker before Create returns, and
// each thread that later runs a range has run it.
std::mutex g_started_mutex;
std::vector<pthread_t> g_started_threads;
void RecordThreadStart() {
  std::lock_guard<std::mutex> lock(g_started_mutex);
  g_started_threads.push_back(pthread_self());
}

TEST(ThreadPoolTest, ThreadStartRunsOnEveryThreadBeforeCreateReturns) {
  g_started_threads.clear();
  auto pool = ThreadPool::Create({.num_threads = 4, .thread_start = RecordThreadStart});
  ASSERT_TRUE(pool.ok());
  std::vector<pthread_t> started;
  {
    std::lock_guard<std::mutex> lock(g_started_mutex);
    started = g_started_threads;
  }
  ASSERT_EQ(started.size(), 4u);
  for (size_t i = 0; i < started.size(); ++i) {
    for (size_t j = i + 1; j < started.size(); ++j)
      EXPECT_FALSE(pthread_equal(started[i], started[j]));
  }
  std::mutex mutex;
  std::vector<pthread_t> runners;
  for (int round = 0; round < 50; ++round) {
    (*pool)->ParallelFor(64, 1, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(mutex);
      runners.push_back(pthread_self());
    });
  }
  for (pthread_t runner : runners) {
    EXPECT_TRUE(std::any_of(started.begin(), started.end(),
                            [&](pthread_t t) { return pthread_equal(t, runner); }));
  }
}

// Every index is visited exactly once, for many (n, grain, threads) combinations.
TEST(ThreadPoolTest, CoversEachIndexOnce) {
  for (int num_threads : {1, 2, 3, 5}) {
    auto pool = MakePool(num_threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000, 4097}) {
      for (int64_t grain : {1, 3, 8, 100, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool->ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          ASSERT_LE(0, begin);
          ASSERT_LT(begin, end);
          ASSERT_LE(end, n);
          ASSERT_EQ(begin % grain, 0);
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << "threads " << num_threads << " n " << n << " grain " << grain << " i " << i;
        }
      }
    }
  }
}

TEST(ThreadPoolTest, SumsOverRanges) {
  auto pool = MakePool(3);
  constexpr int64_t kN = 100000;
  std::vector<int64_t> values(kN);
  std::iota(values.begin(), values.end(), 1);
  std::vector<int64_t> partial(kN, 0);
  pool->ParallelFor(kN, 1000, [&](int64_t begin, int64_t end) {
    int64_t sum = 0;
    for (int64_t i = begin; i < end; ++i) sum += values[static_cast<size_t>(i)];
    partial[static_cast<size_t>(begin)] = sum;  // ranges are disjoint: one writer per slot
  });
  EXPECT_EQ(std::accumulate(partial.begin(), partial.end(), int64_t{0}), kN * (kN + 1) / 2);
}

// The split depends only on (n, grain, threads) and is contiguous and balanced.
TEST(ThreadPoolTest, StaticSplitIsDeterministic) {
  constexpr int kThreads = 4;
  int64_t previous_end = 0;
  for (int t = 0; t < kThreads; ++t) {
    const auto [begin, end] = ThreadPool::SplitRange(1000, 10, kThreads, t);
    EXPECT_EQ(begin, previous_end);
    EXPECT_EQ(end - begin, 250);
    previous_end = end;
  }
  EXPECT_EQ(ThreadPool::SplitRange(5, 10, 4, 3), (std::pair<int64_t, int64_t>{0, 5}));
  EXPECT_EQ(ThreadPool::SplitRange(5, 10, 4, 0).second - ThreadPool::SplitRange(5, 10, 4, 0).first,
            0);

  auto pool = MakePool(kThreads);
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> first_ranges;
  for (int repeat = 0; repeat < 20; ++repeat) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    pool->ParallelFor(1000, 7, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      ranges.emplace_back(begin, end);
    });
    std::sort(ranges.begin(), ranges.end());
    if (repeat == 0) {
      first_ranges = ranges;
    } else {
      ASSERT_EQ(ranges, first_ranges);
    }
  }
}

// The two ranges run at the same time on two threads: each waits until both have started.
// (The caller takes over ranges no worker has claimed, but only after its own range.)
TEST(ThreadPoolTest, RunsRangesConcurrently) {
  auto pool = MakePool(2);
  std::atomic<int> started{0};
  std::atomic<bool> both_ran{true};
  std::mutex mutex;
  std::vector<pthread_t> threads;
  pool->ParallelFor(2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      threads.push_back(pthread_self());
    }
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        both_ran = false;
        break;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(both_ran.load());
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_FALSE(pthread_equal(threads[0], threads[1]));
}

TEST(ThreadPoolTest, ManyRapidCalls) {
  auto pool = MakePool(2);
  std::atomic<int64_t> total{0};
  constexpr int kCalls = 20000;
  for (int call = 0; call < kCalls; ++call) {
    pool->ParallelFor(16, 1, [&](int64_t begin, int64_t end) {
      total.fetch_add(end - begin, std::memory_order_relaxed);
    });
  }
  EXPECT_EQ(total.load(), int64_t{16} * kCalls);
}

// Workers that have gone to sleep (no spinning) are woken by the next region.
TEST(ThreadPoolTest, WakesSleepingWorkers) {
  auto pool = MakePool(3, /*spin_us=*/0);
  for (int call = 0; call < 200; ++call) {
    std::atomic<int64_t> total{0};
    pool->ParallelFor(30, 1, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
    ASSERT_EQ(total.load(), 30);
    if (call % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(ThreadPoolTest, NestedCallRunsInline) {
  auto pool = MakePool(2);
  std::atomic<int64_t> inner_total{0};
  pool->ParallelFor(4, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const pthread_t outer = pthread_self();
      pool->ParallelFor(10, 1, [&](int64_t b, int64_t e) {
        EXPECT_TRUE(pthread_equal(outer, pthread_self()));
        inner_total.fetch_add(e - b);
      });
    }
  });
  EXPECT_EQ(inner_total.load(), 40);
}

TEST(ThreadPoolTest, CallsFromSeveralThreadsAreSerialised) {
  auto pool = MakePool(2);
  std::atomic<int> active{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int64_t> total{0};
  auto client = [&] {
    for (int call = 0; call < 500; ++call) {
      pool->ParallelFor(8, 1, [&](int64_t begin, int64_t end) {
        total.fetch_add(end - begin);
        // More than the pool's own threads inside a region means two regions overlapped.
        if (active.fetch_add(1) + 1 > pool->num_threads()) overlapped = true;
        active.fetch_sub(1);
      });
    }
  };
  std::thread a(client);
  std::thread b(client);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 500 * 8);
  EXPECT_FALSE(overlapped.load());
}

TEST(ThreadPoolTest, DestroyRightAfterCreate) {
  for (int i = 0; i < 20; ++i) {
    auto pool = MakePool(3, i % 2 == 0 ? 0 : 100);
  }
}

#ifndef NDEBUG
TEST(ThreadPoolTest, DebugBuildsRunChunksInReverse) {
  auto pool = MakePool(1);
  std::vector<int64_t> begins;
  pool->ParallelFor(10, 3, [&](int64_t begin, int64_t) { begins.push_back(begin); });
  EXPECT_EQ(begins, (std::vector<int64_t>{9, 6, 3, 0}));
}
#endif

}  // namespace
}  // namespace reprise
