#include "graph/arena_plan.h"

#include <algorithm>
#include <numeric>

#include "base/check.h"

namespace reprise::graph {
namespace {

int64_t AlignUp(int64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool LifetimesOverlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_op <= b.last_op && b.first_op <= a.last_op;
}

}  // namespace

ArenaPlan PlanArena(const std::vector<BufferRequest>& buffers) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].size_bytes > buffers[b].size_bytes;
  });
  struct Placed {
    int64_t begin, end;
    size_t index;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const BufferRequest& buffer = buffers[index];
    REPRISE_CHECK(buffer.size_bytes >= 0 && buffer.first_op <= buffer.last_op) << buffer.name;
    plan.sum_of_buffer_bytes += AlignUp(buffer.size_bytes);
    const int64_t size = AlignUp(std::max<int64_t>(buffer.size_bytes, 1));
    // Byte ranges already taken by buffers alive at the same time, sorted by start.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed) {
      if (LifetimesOverlap(buffers[p.index], buffer)) busy.emplace_back(p.begin, p.end);
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer, else the end.
    int64_t best_offset = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin > cursor && begin - cursor >= size && begin - cursor < best_gap) {
        best_gap = begin - cursor;
        best_offset = cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best_offset < 0) best_offset = cursor;
    placed.push_back({best_offset, best_offset + size, index});
    plan.offsets[index] = best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, best_offset + size);
  }
  return plan;
}

bool IsValidPlan(const std::vector<BufferRequest>& buffers, const ArenaPlan& plan) {
  if (plan.offsets.size() != buffers.size()) return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (plan.offsets[i] % kArenaAlignment != 0) return false;
    if (plan.offsets[i] + buffers[i].size_bytes > plan.arena_bytes) return false;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!LifetimesOverlap(buffers[i], buffers[j])) continue;
      if (buffers[i].size_bytes == 0 || buffers[j].size_bytes == 0) continue;
      const int64_t a0 = plan.offsets[i], a1 = a0 + buffers[i].size_bytes;
      const int64_t b0 = plan.offsets[j], b1 = b0 + buffers[j].size_bytes;
      if (a0 < b1 && b0 < a1) return false;
    }
  }
  return true;
}

}  // namespace reprise::graph
