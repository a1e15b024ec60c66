#include "store/eviction_cost.h"

#include <cmath>
#include <string>
#include <unordered_map>

#include "base/check.h"

namespace reprise::store {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// parent_index[i]: the position of chunk i's parent in `chunks`, or kNone.
std::vector<size_t> ParentIndices(std::span<const ChunkInfo> chunks) {
  std::unordered_map<uint64_t, size_t> position;
  position.reserve(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    const bool unique = position.emplace(chunks[i].id, i).second;
    REPRISE_CHECK(unique) << "duplicate chunk id " << chunks[i].id;
  }
  std::vector<size_t> parent_index(chunks.size(), kNone);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].parent == 0) continue;
    auto it = position.find(chunks[i].parent);
    if (it != position.end() && it->second != i) parent_index[i] = it->second;
  }
  return parent_index;
}

}  // namespace

Status ValidateCostModel(const CostModel& costs) {
  if (!(costs.read_bytes_per_ms > 0) || !std::isfinite(costs.read_bytes_per_ms)) {
    return InvalidArgumentError("read_bytes_per_ms must be finite and > 0");
  }
  if (!(costs.compute_ms_per_token >= 0) || !std::isfinite(costs.compute_ms_per_token)) {
    return InvalidArgumentError("compute_ms_per_token must be finite and >= 0");
  }
  if (!(costs.nonprefix_extra_ms_per_token >= 0) ||
      !std::isfinite(costs.nonprefix_extra_ms_per_token)) {
    return InvalidArgumentError("nonprefix_extra_ms_per_token must be finite and >= 0");
  }
  return Status::Ok();
}

double PoolEvictionCostMs(const ChunkInfo& chunk, const CostModel& costs) {
  if (!chunk.exact) return 0;
  return static_cast<double>(chunk.bytes) / costs.read_bytes_per_ms;
}

std::vector<double> FlashEvictionCostsMs(std::span<const ChunkInfo> chunks, const CostModel& costs,
                                         const LocalityModel& model, double now_s) {
  const size_t n = chunks.size();
  const std::vector<size_t> parent_index = ParentIndices(chunks);

  // Children lists in CSR form, then a breadth-first order from the roots, so that reverse
  // order visits every child before its parent. Chunks on a parent cycle (corrupt links) are
  // never reached and get no cascade.
  std::vector<size_t> first_child(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (parent_index[i] != kNone) ++first_child[parent_index[i] + 1];
  }
  for (size_t i = 0; i < n; ++i) first_child[i + 1] += first_child[i];
  std::vector<size_t> children(first_child[n]);
  std::vector<size_t> fill(first_child.begin(), first_child.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (parent_index[i] != kNone) children[fill[parent_index[i]]++] = i;
  }
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (parent_index[i] == kNone) order.push_back(i);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    const size_t node = order[head];
    for (size_t c = first_child[node]; c < first_child[node + 1]; ++c) {
      order.push_back(children[c]);
    }
  }

  // below[i]: the cascade chunk i's exact descendants (through exact chunks) would suffer.
  std::vector<double> below(n, 0.0);
  for (size_t k = order.size(); k-- > 0;) {
    const size_t node = order[k];
    double sum = 0;
    for (size_t c = first_child[node]; c < first_child[node + 1]; ++c) {
      const ChunkInfo& child = chunks[children[c]];
      if (!child.exact) continue;
      sum +=
          model.HitFrequency(child, now_s) * child.num_tokens * costs.nonprefix_extra_ms_per_token +
          below[children[c]];
    }
    below[node] = sum;
  }

  // The primary copy of each content: exact first, then the lowest id.
  std::unordered_map<uint64_t, size_t> primary;
  for (size_t i = 0; i < n; ++i) {
    if (chunks[i].content == 0) continue;
    auto [it, inserted] = primary.try_emplace(chunks[i].content, i);
    const ChunkInfo& best = chunks[it->second];
    if (!inserted && (chunks[i].exact > best.exact ||
                      (chunks[i].exact == best.exact && chunks[i].id < best.id))) {
      it->second = i;
    }
  }

  std::vector<double> cost(n);
  for (size_t i = 0; i < n; ++i) {
    const ChunkInfo& chunk = chunks[i];
    const bool redundant = chunk.content != 0 && primary.find(chunk.content)->second != i;
    double own = chunk.num_tokens * costs.compute_ms_per_token;
    if (redundant) own = chunk.exact ? chunk.num_tokens * costs.nonprefix_extra_ms_per_token : 0;
    cost[i] = own + (chunk.exact ? below[i] : 0.0);
  }
  return cost;
}

std::vector<double> EvictionCostsMs(std::span<const ChunkInfo> chunks, StoreTier tier,
                                    const CostModel& costs, const LocalityModel& model,
                                    double now_s) {
  if (tier == StoreTier::kFlash) return FlashEvictionCostsMs(chunks, costs, model, now_s);
  std::vector<double> cost;
  cost.reserve(chunks.size());
  for (const ChunkInfo& chunk : chunks) cost.push_back(PoolEvictionCostMs(chunk, costs));
  return cost;
}

std::vector<bool> HasChildren(std::span<const ChunkInfo> chunks) {
  const std::vector<size_t> parent_index = ParentIndices(chunks);
  std::vector<bool> has_children(chunks.size(), false);
  for (size_t p : parent_index) {
    if (p != kNone) has_children[p] = true;
  }
  return has_children;
}

}  // namespace reprise::store
