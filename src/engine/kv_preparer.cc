#include "engine/kv_preparer.h"

#include <chrono>

namespace reprise::engine {
namespace {

double MillisecondsBetween(std::chrono::steady_clock::time_point a,
                           std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

KvPreparer::KvPreparer(const reuse::ReusePlan& plan, reuse::KvLoader& loader, kv::KvCache& cache,
                       std::span<const int32_t> positions, const RopeLayout& rope,
                       const kernels::KernelSet& kernels)
    : plan_(plan),
      loader_(loader),
      cache_(cache),
      positions_(positions),
      rope_(rope),
      kernels_(kernels) {
  // Runs of tokens that come from consecutive tokens of one source chunk: one copy each.
  const int n = static_cast<int>(plan.tokens.size());
  for (int i = 0; i < n;) {
    const reuse::TokenSource& t = plan.tokens[static_cast<size_t>(i)];
    if (t.kind == reuse::TokenKind::kNew) {
      ++i;
      continue;
    }
    int j = i + 1;
    while (j < n) {
      const reuse::TokenSource& u = plan.tokens[static_cast<size_t>(j)];
      if (u.kind != t.kind || u.source != t.source || u.source_token != t.source_token + (j - i)) {
        break;
      }
      ++j;
    }
    runs_.push_back(Run{i, j, t.source, t.source_token});
    i = j;
  }
  if (!runs_.empty()) worker_ = std::thread([this] { PlaceAll(); });
}

KvPreparer::~KvPreparer() {
  stop_.store(true, std::memory_order_relaxed);
  if (worker_.joinable()) worker_.join();
}

void KvPreparer::PlaceAll() {
  for (const Run& run : runs_) {
    if (stop_.load(std::memory_order_relaxed)) return;
    const std::shared_ptr<const kv::ChunkKv> chunk = loader_.Wait(run.source);
    if (!chunk) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed_ = true;
      }
      placed_.notify_all();
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    PlaceChunkRows(*chunk, run.source_token,
                   positions_.subspan(static_cast<size_t>(run.begin),
                                      static_cast<size_t>(run.end - run.begin)),
                   cache_, run.begin, rope_, kernels_);
    const double ms = MillisecondsBetween(start, std::chrono::steady_clock::now());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++num_placed_runs_;
      place_ms_ += ms;
    }
    placed_.notify_all();
  }
}

bool KvPreparer::ReadyUntil(int end) {
  size_t needed = num_committed_runs_;
  while (needed < runs_.size() && runs_[needed].begin < end) ++needed;
  if (needed == num_committed_runs_) return true;
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    placed_.wait(lock, [&] { return failed_ || num_placed_runs_ >= needed; });
    if (num_placed_runs_ < needed) {
      wait_ms_ += MillisecondsBetween(start, std::chrono::steady_clock::now());
      return false;
    }
  }
  wait_ms_ += MillisecondsBetween(start, std::chrono::steady_clock::now());
  std::span<int32_t> slots = cache_.slot_positions();
  for (; num_committed_runs_ < needed; ++num_committed_runs_) {
    const Run& run = runs_[num_committed_runs_];
    for (int i = run.begin; i < run.end; ++i) {
      slots[static_cast<size_t>(i)] = positions_[static_cast<size_t>(i)];
    }
  }
  return true;
}

double KvPreparer::place_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return place_ms_;
}

}  // namespace reprise::engine
