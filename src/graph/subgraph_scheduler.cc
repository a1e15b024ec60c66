#include "graph/subgraph_scheduler.h"

#include <thread>
#include <vector>

#include "base/check.h"
#include "base/mutex.h"

namespace reprise::graph {
namespace {

class Scheduler {
 public:
  Scheduler(int num_chunks, int num_shards, const SubgraphSchedulerOptions& options,
            const std::function<bool(const Subgraph&, int)>& run)
      : num_chunks_(num_chunks),
        num_shards_(num_shards),
        options_(options),
        run_(run),
        next_shard_(static_cast<size_t>(num_chunks), 0),
        running_(static_cast<size_t>(num_chunks), false) {}

  void Work(int worker) {
    MutexLock lock(mutex_);
    for (;;) {
      if (first_unfinished_ == num_chunks_ || (failed_ && num_running_ == 0)) {
        ready_.NotifyAll();
        return;
      }
      Subgraph next;
      if (!failed_ && Pick(worker, &next)) {
        running_[static_cast<size_t>(next.chunk)] = true;
        ++num_running_;
        lock.Unlock();
        const bool ok = run_(next, worker);
        lock.Lock();
        --num_running_;
        running_[static_cast<size_t>(next.chunk)] = false;
        if (!ok) failed_ = true;
        ++next_shard_[static_cast<size_t>(next.chunk)];
        while (first_unfinished_ < num_chunks_ &&
               next_shard_[static_cast<size_t>(first_unfinished_)] == num_shards_) {
          ++first_unfinished_;
        }
        ready_.NotifyAll();
        continue;
      }
      ready_.Wait(lock);
    }
  }

  bool failed() {
    MutexLock lock(mutex_);
    return failed_;
  }

 private:
  // The ready subgraph of the earliest chunk that `worker` takes.
  bool Pick(int worker, Subgraph* out) const REPRISE_REQUIRES(mutex_) {
    const int end = std::min(num_chunks_, first_unfinished_ + options_.window);
    for (int c = first_unfinished_; c < end; ++c) {
      const int s = next_shard_[static_cast<size_t>(c)];
      if (s == num_shards_ || running_[static_cast<size_t>(c)]) continue;
      // (c - 1, s) done: the earlier chunk has passed shard s.
      if (c > 0 && next_shard_[static_cast<size_t>(c - 1)] <= s) continue;
      const Subgraph candidate{c, s};
      if (options_.accepts && !options_.accepts(worker, candidate)) continue;
      *out = candidate;
      return true;
    }
    return false;
  }

  const int num_chunks_, num_shards_;
  const SubgraphSchedulerOptions& options_;
  const std::function<bool(const Subgraph&, int)>& run_;
  Mutex mutex_;
  CondVar ready_;
  // Per chunk: its next shard to run (num_shards_ = finished).
  std::vector<int> next_shard_ REPRISE_GUARDED_BY(mutex_);
  std::vector<bool> running_ REPRISE_GUARDED_BY(mutex_);  // per chunk: one of its shards runs
  int first_unfinished_ REPRISE_GUARDED_BY(mutex_) = 0;
  int num_running_ REPRISE_GUARDED_BY(mutex_) = 0;
  bool failed_ REPRISE_GUARDED_BY(mutex_) = false;
};

}  // namespace

bool RunOutOfOrder(int num_chunks, int num_shards, const SubgraphSchedulerOptions& options,
                   const std::function<bool(const Subgraph&, int)>& run) {
  REPRISE_CHECK(num_chunks >= 0 && num_shards >= 0 && options.num_workers >= 1 &&
                options.window >= 1);
  if (num_chunks == 0 || num_shards == 0) return true;
  if (options.accepts) {
    for (int c = 0; c < num_chunks; ++c) {
      for (int s = 0; s < num_shards; ++s) {
        bool taken = false;
        for (int w = 0; w < options.num_workers && !taken; ++w) taken = options.accepts(w, {c, s});
        REPRISE_CHECK(taken) << "no worker takes subgraph (" << c << ", " << s << ")";
      }
    }
  }
  Scheduler scheduler(num_chunks, num_shards, options, run);
  std::vector<std::thread> threads;
  for (int w = 1; w < options.num_workers; ++w) {
    threads.emplace_back([&scheduler, w] { scheduler.Work(w); });
  }
  scheduler.Work(0);
  for (std::thread& t : threads) t.join();
  return !scheduler.failed();
}

}  // namespace reprise::graph
