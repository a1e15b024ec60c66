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
                       const kernels::KernelSet& kernels, KvPreparationOrder order)
    : loader_(loader),
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
  const int num_layers = cache.shape().num_layers;
  group_first_layer_.push_back(0);
  for (int layer : order.shard_first_layers) {
    if (layer > group_first_layer_.back() && layer < num_layers) {
      group_first_layer_.push_back(layer);
    }
  }
  group_first_layer_.push_back(num_layers);
  // Windows: the runs each call needs that earlier calls did not; then one per run left.
  size_t next = 0;
  for (int end : order.call_ends) {
    if (next < runs_.size() && runs_[next].begin < end) {
      window_begin_.push_back(next);
      while (next < runs_.size() && runs_[next].begin < end) ++next;
    }
  }
  for (; next < runs_.size(); ++next) window_begin_.push_back(next);
  window_begin_.push_back(runs_.size());
  run_kv_.resize(runs_.size());
  {
    MutexLock lock(mutex_);
    placed_groups_.assign(runs_.size(), 0);
  }
  if (!runs_.empty()) worker_ = std::thread([this] { PlaceAll(); });
}

KvPreparer::~KvPreparer() {
  stop_.store(true, std::memory_order_relaxed);
  if (worker_.joinable()) worker_.join();
}

void KvPreparer::PlaceAll() {
  const size_t num_groups = group_first_layer_.size() - 1;
  for (size_t w = 0; w + 1 < window_begin_.size(); ++w) {
    for (size_t g = 0; g < num_groups; ++g) {
      for (size_t r = window_begin_[w]; r < window_begin_[w + 1]; ++r) {
        if (stop_.load(std::memory_order_relaxed)) return;
        if (!Place(r, g)) {
          {
            MutexLock lock(mutex_);
            failed_ = true;
          }
          placed_.NotifyAll();
          return;
        }
      }
    }
  }
}

bool KvPreparer::Place(size_t r, size_t group) {
  const Run& run = runs_[r];
  if (group == 0) {
    run_kv_[r] = loader_.Wait(run.source);
    if (!run_kv_[r]) return false;
  }
  const auto start = std::chrono::steady_clock::now();
  PlaceChunkRows(
      *run_kv_[r], run.source_token,
      positions_.subspan(static_cast<size_t>(run.begin), static_cast<size_t>(run.end - run.begin)),
      cache_, run.begin, rope_, kernels_, group_first_layer_[group], group_first_layer_[group + 1]);
  const double ms = MillisecondsBetween(start, std::chrono::steady_clock::now());
  if (group + 2 == group_first_layer_.size()) run_kv_[r].reset();  // the last group
  {
    MutexLock lock(mutex_);
    placed_groups_[r] = static_cast<int>(group) + 1;
    place_ms_ += ms;
  }
  placed_.NotifyAll();
  return true;
}

bool KvPreparer::ReadyUntil(int end, int end_layer) {
  size_t needed = 0;
  while (needed < runs_.size() && runs_[needed].begin < end) ++needed;
  // The groups holding layers [0, end_layer).
  int groups = 0;
  while (groups + 1 < static_cast<int>(group_first_layer_.size()) &&
         group_first_layer_[static_cast<size_t>(groups)] < end_layer) {
    ++groups;
  }
  if (needed == 0 || groups == 0) return true;
  // Placed run by run within a window and window by window: the runs before `needed` are
  // placed through `groups` once the last of them is, unless an earlier window (placed in
  // full first) holds it.
  const auto is_ready = [&]() REPRISE_REQUIRES(mutex_) {
    for (size_t r = needed; r-- > 0;) {
      if (placed_groups_[r] < groups) return false;
      if (placed_groups_[r] == static_cast<int>(group_first_layer_.size()) - 1) break;
    }
    return true;
  };
  const auto start = std::chrono::steady_clock::now();
  {
    MutexLock lock(mutex_);
    if (!is_ready()) {
      while (!failed_ && !is_ready()) placed_.Wait(lock);
      if (!is_ready()) {
        wait_ms_ += MillisecondsBetween(start, std::chrono::steady_clock::now());
        return false;
      }
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
  MutexLock lock(mutex_);
  return place_ms_;
}

}  // namespace reprise::engine
