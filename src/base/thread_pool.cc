#include "base/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace reprise {
namespace {

// True on pool workers, and on a caller while it runs its share of a region: a ParallelFor
// made there runs inline instead of waiting for threads that are busy with the outer region.
thread_local bool tls_in_region = false;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  // The kernel re-checks *word == expected atomically, so a wake between our last load and
  // the sleep is not lost. Spurious returns (EINTR, EAGAIN) are fine: callers loop.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

using Clock = std::chrono::steady_clock;

// The claim word keeps range counts in 16 bits.
constexpr int kMaxThreads = 1024;

}  // namespace

struct ThreadPool::Worker {
  ThreadPool* pool = nullptr;
  pthread_t thread{};
};

ThreadPool::ThreadPool(int num_threads, int spin_us, void (*thread_start)())
    : num_threads_(num_threads), spin_us_(spin_us), thread_start_(thread_start) {}

Result<std::unique_ptr<ThreadPool>> ThreadPool::Create(const ThreadPoolOptions& options) {
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return InvalidArgumentError("thread pool: num_threads must be in [0, 1024], got " +
                                std::to_string(options.num_threads));
  }
  if (options.spin_us < 0) {
    return InvalidArgumentError("thread pool: spin_us must be >= 0");
  }
  const int num_threads =
      options.num_threads == 0 ? GetCpuFeatures().num_usable_cores : options.num_threads;
  std::unique_ptr<ThreadPool> pool(
      new ThreadPool(num_threads, options.spin_us, options.thread_start));
  if (options.thread_start != nullptr) options.thread_start();
  REPRISE_RETURN_IF_ERROR(pool->StartWorkers());
  return pool;
}

Status ThreadPool::StartWorkers() {
  for (int i = 1; i < num_threads_; ++i) {
    auto worker = std::make_unique<Worker>();
    worker->pool = this;
    // pthread_create reports failure as a value, where std::thread would throw.
    const int rc = pthread_create(&worker->thread, nullptr, &ThreadPool::WorkerMain, worker.get());
    if (rc != 0) {
      return ResourceExhaustedError(std::string("thread pool: cannot start a worker: ") +
                                    std::strerror(rc));
    }
    workers_.push_back(std::move(worker));
  }
  const int num_workers = static_cast<int>(workers_.size());
  while (num_started_.load(std::memory_order_acquire) < num_workers) sched_yield();
  return Status::Ok();
}

ThreadPool::~ThreadPool() {
  // seq_cst pairs with the sleepers' seq_cst increment, as in Run().
  stopping_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  FutexWakeAll(&generation_);
  for (const auto& worker : workers_) pthread_join(worker->thread, nullptr);
}

void* ThreadPool::WorkerMain(void* arg) {
  tls_in_region = true;
  ThreadPool* pool = static_cast<Worker*>(arg)->pool;
  if (pool->thread_start_ != nullptr) pool->thread_start_();
  pool->num_started_.fetch_add(1, std::memory_order_release);
  pool->WorkerLoop();
  return nullptr;
}

std::pair<int64_t, int64_t> ThreadPool::SplitRange(int64_t n, int64_t grain, int num_ranges,
                                                   int range_index) {
  const int64_t num_chunks = (n + grain - 1) / grain;
  const int64_t first = num_chunks * range_index / num_ranges;
  const int64_t last = num_chunks * (range_index + 1) / num_ranges;
  const int64_t begin = first * grain < n ? first * grain : n;
  const int64_t end = last * grain < n ? last * grain : n;
  return {begin, end};
}

void ThreadPool::RunRange(RangeFn fn, void* context, int64_t begin, int64_t end, int64_t grain) {
  if (begin >= end) return;
#ifdef NDEBUG
  (void)grain;
  fn(context, begin, end);
#else
  // Debug builds: grain-sized chunks, last first (docs/style.md §6).
  const int64_t num_chunks = (end - begin + grain - 1) / grain;
  for (int64_t c = num_chunks - 1; c >= 0; --c) {
    const int64_t chunk_begin = begin + c * grain;
    const int64_t chunk_end = chunk_begin + grain < end ? chunk_begin + grain : end;
    fn(context, chunk_begin, chunk_end);
  }
#endif
}

int ThreadPool::RunClaimedRanges(uint32_t generation) {
  int num_run = 0;
  uint64_t claim = claim_.load(std::memory_order_relaxed);
  for (;;) {
    // The claim word says which region it belongs to and how many ranges that region has,
    // so nothing of the job is read before a range of it is ours.
    if (static_cast<uint32_t>(claim >> 32) != generation) return num_run;  // a stale region
    const int num_ranges = static_cast<int>((claim >> 16) & 0xffffu);
    const int index = static_cast<int>(claim & 0xffffu);
    if (index >= num_ranges) return num_run;
    // acquire on success: pairs with the caller's release store of claim_ (the CAS chain is
    // its release sequence), so the job fields are visible once a range is ours.
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
      continue;
    }
    const auto [begin, end] = SplitRange(job_n_, job_grain_, num_ranges, index);
    RunRange(job_fn_, job_context_, begin, end, job_grain_);
    ++num_run;
    // release: publishes this range's writes to the caller, which waits for zero.
    num_ranges_left_.fetch_sub(1, std::memory_order_release);
    claim = claim_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::Run(int64_t n, int64_t grain, RangeFn fn, void* context) {
  REPRISE_CHECK(n >= 0 && grain >= 1) << "ParallelFor(n=" << n << ", grain=" << grain << ")";
  if (n == 0) return;
  // Inline: nested calls, single-thread pools, and work that fits one grain.
  if (tls_in_region || num_threads_ == 1 || n <= grain) {
    RunRange(fn, context, 0, n, grain);
    return;
  }
  std::lock_guard<std::mutex> lock(run_mutex_);
  const int64_t num_chunks = (n + grain - 1) / grain;
  job_fn_ = fn;
  job_context_ = context;
  job_n_ = n;
  job_grain_ = grain;
  const int num_ranges = static_cast<int>(num_chunks < num_threads_ ? num_chunks : num_threads_);
  // relaxed: ordered before the release store of claim_ below.
  num_ranges_left_.store(num_ranges, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  // release: a worker whose claim reads this value sees the job fields above.
  claim_.store(
      (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(num_ranges) << 16),
      std::memory_order_release);
  // seq_cst (store-load pairing with the sleepers' increment-then-check): either a worker
  // about to sleep sees the new generation, or we see it in num_sleepers_ and wake it.
  generation_.store(generation, std::memory_order_seq_cst);
  if (num_sleepers_.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&generation_);

  // The caller runs ranges too, starting with the first, and takes over any range that no
  // worker has claimed yet.
  tls_in_region = true;
  RunClaimedRanges(generation);
  tls_in_region = false;

  // acquire: pairs with each range's release decrement, so its writes are visible.
  int spins = 0;
  while (num_ranges_left_.load(std::memory_order_acquire) != 0) {
    CpuRelax();
    // A worker may be waiting for this core (more threads than free cores): let it run.
    if (++spins > 2048) sched_yield();
  }
}

void ThreadPool::WorkerLoop() {
  // Generation 0 is the one before the first region: a worker that starts late must not
  // skip a region published before it first looked.
  uint32_t seen = 0;
  const auto spin_duration = std::chrono::microseconds(spin_us_);
  for (;;) {
    // Wait for the next generation: spin first, then sleep on the futex.
    uint32_t current = generation_.load(std::memory_order_acquire);
    if (current == seen) {
      const auto spin_end = Clock::now() + spin_duration;
      int spins = 0;
      while ((current = generation_.load(std::memory_order_acquire)) == seen) {
        CpuRelax();
        if ((++spins & 255) == 0 && Clock::now() >= spin_end) break;
      }
      while (current == seen) {
        num_sleepers_.fetch_add(1, std::memory_order_seq_cst);
        current = generation_.load(std::memory_order_seq_cst);
        if (current == seen) FutexWait(&generation_, seen);
        num_sleepers_.fetch_sub(1, std::memory_order_relaxed);
        current = generation_.load(std::memory_order_acquire);
      }
    }
    seen = current;
    if (stopping_.load(std::memory_order_acquire)) return;
    RunClaimedRanges(current);
  }
}

}  // namespace reprise
