#include "store/locality.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace reprise::store {
namespace {

// What is idle this many half-lives weighs below 1e-12: forgotten.
constexpr double kHalfLivesKept = 40;
// How often (in requests) the sweep runs.
constexpr int64_t kSweepEveryRequests = 256;

double Clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

}  // namespace

Result<LocalityModel> LocalityModel::Create(const LocalityOptions& options) {
  const double weights[] = {options.weight_spatial, options.weight_temporal,
                            options.weight_semantic};
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      return InvalidArgumentError("locality weights must be finite and >= 0");
    }
  }
  if (weights[0] + weights[1] + weights[2] <= 0) {
    return InvalidArgumentError("locality weights must not all be 0");
  }
  if (!(options.recency_half_life_s > 0) || !(options.frequency_half_life_s > 0)) {
    return InvalidArgumentError("locality half-lives must be > 0");
  }
  if (!(options.frequency_half_saturation > 0) || !(options.co_access_prior > 0)) {
    return InvalidArgumentError("frequency_half_saturation and co_access_prior must be > 0");
  }
  if (!(options.recency_share >= 0 && options.recency_share <= 1)) {
    return InvalidArgumentError("recency_share must be in [0, 1]");
  }
  if (options.max_co_access_per_chunk < 1 || options.max_linked_chunks_per_request < 1 ||
      options.max_tracked_contents < 1) {
    return InvalidArgumentError(
        "max_co_access_per_chunk, max_linked_chunks_per_request and "
        "max_tracked_contents must be >= 1");
  }
  return LocalityModel(options);
}

double LocalityModel::Recency(double last_use_s, double now_s) const {
  const double elapsed_s = std::max(0.0, now_s - last_use_s);
  return std::exp2(-elapsed_s / options_.recency_half_life_s);
}

double LocalityModel::DecayedCount(double count, double since_s, double now_s) const {
  const double elapsed_s = std::max(0.0, now_s - since_s);
  return count * std::exp2(-elapsed_s / options_.frequency_half_life_s);
}

void LocalityModel::RecordRequest(std::span<const ChunkInfo> chunks_used_in_order, double now_s) {
  now_s = std::max(now_s, latest_s_);
  latest_s_ = now_s;
  ++num_requests_;

  std::unordered_set<uint64_t> seen_nodes;
  std::unordered_set<uint64_t> seen_keys;
  std::vector<ContentStats*> linked;  // the first contents of the request, for co-access
  std::vector<uint64_t> linked_keys;
  for (const ChunkInfo& chunk : chunks_used_in_order) {
    const uint64_t key = Key(chunk);
    if (seen_nodes.insert(chunk.id).second) {
      auto [it, inserted] = nodes_.try_emplace(chunk.id);
      NodeStats& node = it->second;
      if (inserted) {
        node.parent = chunk.parent;
        if (chunk.parent != 0) {
          auto parent = nodes_.find(chunk.parent);
          if (parent != nodes_.end()) ++parent->second.num_children;
        }
      }
      node.key = key;
      node.last_use_s = now_s;
    }
    if (chunk.document != 0) documents_[chunk.document] = now_s;
    if (!seen_keys.insert(key).second) continue;
    ContentStats& stats = contents_[key];
    stats.count = DecayedCount(stats.count, stats.last_use_s, now_s) + 1;
    stats.last_use_s = now_s;
    if (std::ssize(linked) < options_.max_linked_chunks_per_request) {
      linked.push_back(&stats);  // unordered_map references survive rehashing
      linked_keys.push_back(key);
    }
  }
  for (size_t i = 0; i < linked.size(); ++i) {
    for (size_t j = 0; j < linked.size(); ++j) {
      if (i != j) Link(*linked[i], linked_keys[j], now_s);
    }
  }
  if (num_requests_ % kSweepEveryRequests == 0) Sweep(now_s);
}

void LocalityModel::Link(ContentStats& stats, uint64_t other, double now_s) {
  for (CoAccess& link : stats.links) {
    if (link.other == other) {
      link.count = DecayedCount(link.count, link.updated_s, now_s) + 1;
      link.updated_s = now_s;
      return;
    }
  }
  const CoAccess fresh{other, 1.0, now_s};
  if (std::ssize(stats.links) < options_.max_co_access_per_chunk) {
    stats.links.push_back(fresh);
    return;
  }
  // Full: the weakest link (a link to a forgotten content first) gives way if a fresh link
  // would outweigh it, so that the list keeps the highest decayed counts.
  size_t weakest = 0;
  double weakest_count = 0;
  for (size_t i = 0; i < stats.links.size(); ++i) {
    const CoAccess& link = stats.links[i];
    const double count =
        contents_.contains(link.other) ? DecayedCount(link.count, link.updated_s, now_s) : -1.0;
    if (i == 0 || count < weakest_count) {
      weakest = i;
      weakest_count = count;
    }
  }
  if (weakest_count < fresh.count) stats.links[weakest] = fresh;
}

void LocalityModel::Forget(uint64_t id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) {
    ForgetContent(id);  // history keyed by the id, if the node was swept before
    return;
  }
  if (it->second.key == id) ForgetContent(id);
  if (it->second.parent != 0) {
    auto parent = nodes_.find(it->second.parent);
    if (parent != nodes_.end() && parent->second.num_children > 0) {
      --parent->second.num_children;
    }
  }
  nodes_.erase(it);
}

void LocalityModel::ForgetContent(uint64_t content) {
  auto it = contents_.find(content);
  if (it == contents_.end()) return;
  for (const CoAccess& link : it->second.links) {
    auto other = contents_.find(link.other);
    if (other == contents_.end()) continue;
    std::erase_if(other->second.links, [content](const CoAccess& l) { return l.other == content; });
  }
  contents_.erase(it);
}

void LocalityModel::Sweep(double now_s) {
  const double recency_horizon_s = kHalfLivesKept * options_.recency_half_life_s;
  const double frequency_horizon_s = kHalfLivesKept * options_.frequency_half_life_s;
  std::erase_if(documents_,
                [&](const auto& entry) { return now_s - entry.second > recency_horizon_s; });
  std::erase_if(nodes_, [&](const auto& entry) {
    return now_s - entry.second.last_use_s > recency_horizon_s;
  });
  // Contents: the long idle, then the stalest beyond the cap.
  std::vector<std::pair<double, uint64_t>> by_age;  // (last use, key)
  by_age.reserve(contents_.size());
  for (const auto& [key, stats] : contents_) by_age.emplace_back(stats.last_use_s, key);
  size_t num_drop = 0;
  for (const auto& [last_use_s, key] : by_age) {
    if (now_s - last_use_s > frequency_horizon_s) ++num_drop;
  }
  num_drop = std::max<size_t>(
      num_drop, by_age.size() > static_cast<size_t>(options_.max_tracked_contents)
                    ? by_age.size() - static_cast<size_t>(options_.max_tracked_contents)
                    : 0);
  if (num_drop == 0) return;
  std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(num_drop - 1),
                   by_age.end());
  for (size_t i = 0; i < num_drop; ++i) ForgetContent(by_age[i].second);
}

LocalityTerms LocalityModel::Terms(const ChunkInfo& chunk, double now_s) const {
  LocalityTerms terms;
  auto it = contents_.find(Key(chunk));
  if (it != contents_.end()) {
    const ContentStats& stats = it->second;
    const double recency = Recency(stats.last_use_s, now_s);
    const double count = DecayedCount(stats.count, stats.last_use_s, now_s);
    const double frequency = count / (count + options_.frequency_half_saturation);
    terms.temporal =
        Clamp01(options_.recency_share * recency + (1 - options_.recency_share) * frequency);
    for (const CoAccess& link : stats.links) {
      auto other = contents_.find(link.other);
      if (other == contents_.end()) continue;
      const ContentStats& partner = other->second;
      const double co_count = DecayedCount(link.count, link.updated_s, now_s);
      const double partner_count = DecayedCount(partner.count, partner.last_use_s, now_s);
      const double confidence = co_count / (partner_count + options_.co_access_prior);
      terms.semantic = std::max(terms.semantic, confidence * Recency(partner.last_use_s, now_s));
    }
    terms.semantic = Clamp01(terms.semantic);
  }
  if (chunk.document != 0) {
    auto doc = documents_.find(chunk.document);
    if (doc != documents_.end()) terms.spatial = Recency(doc->second, now_s);
  }
  if (chunk.parent != 0) {
    auto parent = nodes_.find(chunk.parent);
    if (parent != nodes_.end()) {
      const double subtree =
          Recency(parent->second.last_use_s, now_s) / std::max(1, parent->second.num_children);
      terms.spatial = std::max(terms.spatial, subtree);
    }
  }
  terms.spatial = Clamp01(terms.spatial);
  return terms;
}

double LocalityModel::Score(const ChunkInfo& chunk, double now_s) const {
  const LocalityTerms t = Terms(chunk, now_s);
  const double ws = options_.weight_spatial;
  const double wt = options_.weight_temporal;
  const double wm = options_.weight_semantic;
  return Clamp01((ws * t.spatial + wt * t.temporal + wm * t.semantic) / (ws + wt + wm));
}

double LocalityModel::PrefetchScore(const ChunkInfo& chunk, double now_s) const {
  const double ws = options_.weight_spatial;
  const double wm = options_.weight_semantic;
  if (ws + wm <= 0) return 0;
  const LocalityTerms t = Terms(chunk, now_s);
  return Clamp01((ws * t.spatial + wm * t.semantic) / (ws + wm));
}

double LocalityModel::HitFrequency(const ChunkInfo& chunk, double now_s) const {
  auto it = contents_.find(Key(chunk));
  if (it == contents_.end()) return 0;
  const double count = DecayedCount(it->second.count, it->second.last_use_s, now_s);
  return count / (count + options_.frequency_half_saturation);
}

size_t LocalityModel::num_co_access_links() const {
  size_t total = 0;
  for (const auto& [key, stats] : contents_) total += stats.links.size();
  return total;
}

}  // namespace reprise::store
