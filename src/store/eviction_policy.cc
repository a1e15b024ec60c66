#include "store/eviction_policy.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace reprise::store {
namespace {

// Takes chunks in `order` (indices into `chunks`) until they free `bytes_to_free`.
VictimSelection TakeVictims(std::span<const ChunkInfo> chunks, std::span<const size_t> order,
                            int64_t bytes_to_free) {
  VictimSelection selection;
  for (size_t i : order) {
    if (selection.bytes_freed >= bytes_to_free) break;
    selection.ids.push_back(chunks[i].id);
    selection.bytes_freed += chunks[i].bytes;
  }
  return selection;
}

}  // namespace

void LruEvictionPolicy::Touch(uint64_t id, double now_s) {
  last_touch_[id] = LastTouch{now_s, next_sequence_++};
}

VictimSelection LruEvictionPolicy::SelectVictims(std::span<const ChunkInfo> chunks,
                                                 int64_t bytes_to_free, double) const {
  if (bytes_to_free <= 0) return {};
  struct Key {
    double time_s;
    uint64_t sequence;
    uint64_t id;
    size_t index;
  };
  std::vector<Key> keys;
  keys.reserve(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].pinned) continue;
    auto it = last_touch_.find(chunks[i].id);
    if (it == last_touch_.end()) {
      keys.push_back({-std::numeric_limits<double>::infinity(), 0, chunks[i].id, i});
    } else {
      keys.push_back({it->second.time_s, it->second.sequence, chunks[i].id, i});
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.time_s, a.sequence, a.id) < std::tie(b.time_s, b.sequence, b.id);
  });
  std::vector<size_t> order;
  order.reserve(keys.size());
  for (const Key& key : keys) order.push_back(key.index);
  return TakeVictims(chunks, order, bytes_to_free);
}

Result<CostAwareEvictionPolicy> CostAwareEvictionPolicy::Create(const LocalityModel* model,
                                                                const CostAwareOptions& options) {
  if (model == nullptr) return InvalidArgumentError("cost-aware eviction needs a locality model");
  REPRISE_RETURN_IF_ERROR(ValidateCostModel(options.costs));
  return CostAwareEvictionPolicy(model, options);
}

std::vector<RankedChunk> CostAwareEvictionPolicy::Rank(std::span<const ChunkInfo> chunks,
                                                       double now_s) const {
  const std::vector<double> costs =
      EvictionCostsMs(chunks, options_.tier, options_.costs, *model_, now_s);
  const bool flash = options_.tier == StoreTier::kFlash;
  std::vector<bool> has_children;
  if (flash) has_children = HasChildren(chunks);

  std::vector<RankedChunk> ranked;
  ranked.reserve(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ChunkInfo& chunk = chunks[i];
    if (chunk.pinned) continue;
    RankedChunk r;
    r.id = chunk.id;
    r.index = i;
    r.score = model_->Score(chunk, now_s);
    r.cost_ms = costs[i];
    r.priority = r.score * r.cost_ms;
    if (options_.rank_per_byte) {
      r.priority /= static_cast<double>(std::max<int64_t>(chunk.bytes, 1));
    }
    r.has_children = flash && has_children[i];
    ranked.push_back(r);
  }
  // Leaves first applies to flash only; has_children is false for every pool chunk.
  std::sort(ranked.begin(), ranked.end(), [](const RankedChunk& a, const RankedChunk& b) {
    return std::tie(a.priority, a.score, a.has_children, a.id) <
           std::tie(b.priority, b.score, b.has_children, b.id);
  });
  return ranked;
}

VictimSelection CostAwareEvictionPolicy::SelectVictims(std::span<const ChunkInfo> chunks,
                                                       int64_t bytes_to_free, double now_s) const {
  if (bytes_to_free <= 0) return {};
  const std::vector<RankedChunk> ranked = Rank(chunks, now_s);
  std::vector<size_t> order;
  order.reserve(ranked.size());
  for (const RankedChunk& r : ranked) order.push_back(r.index);
  return TakeVictims(chunks, order, bytes_to_free);
}

}  // namespace reprise::store
