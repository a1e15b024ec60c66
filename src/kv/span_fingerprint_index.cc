#include "kv/span_fingerprint_index.h"

#include <algorithm>
#include <cmath>

#include "kv/span_fingerprints.h"

namespace reprise::kv {

std::vector<SpanCandidate> RankSpanCandidates(const std::unordered_map<uint64_t, int>& counts,
                                              int max_candidates) {
  std::vector<SpanCandidate> out;
  if (max_candidates <= 0) return out;
  out.reserve(counts.size());
  for (const auto& [id, n] : counts) out.push_back({id, n});
  const auto better = [](const SpanCandidate& a, const SpanCandidate& b) {
    return a.num_shared != b.num_shared ? a.num_shared > b.num_shared : a.chunk_id < b.chunk_id;
  };
  if (out.size() > static_cast<size_t>(max_candidates)) {
    std::partial_sort(out.begin(), out.begin() + max_candidates, out.end(), better);
    out.resize(static_cast<size_t>(max_candidates));
  } else {
    std::sort(out.begin(), out.end(), better);
  }
  return out;
}

Result<SpanFingerprintIndex> SpanFingerprintIndex::Create(
    const SpanFingerprintIndexOptions& options) {
  if (!(options.max_df_fraction > 0 && options.max_df_fraction <= 1)) {
    return InvalidArgumentError("max_df_fraction must be in (0, 1]");
  }
  if (options.max_df_floor < 1) return InvalidArgumentError("max_df_floor must be >= 1");
  return SpanFingerprintIndex(options);
}

Status SpanFingerprintIndex::Add(uint64_t chunk_id, std::span<const int32_t> tokens) {
  if (fingerprints_of_chunk_.contains(chunk_id)) {
    return InvalidArgumentError("chunk " + std::to_string(chunk_id) + " is already indexed");
  }
  std::vector<uint64_t> fingerprints = SpanFingerprints(tokens);
  for (uint64_t f : fingerprints) chunks_of_fingerprint_[f].push_back(chunk_id);
  num_postings_ += static_cast<int64_t>(fingerprints.size());
  fingerprints_of_chunk_.emplace(chunk_id, std::move(fingerprints));
  return Status::Ok();
}

Status SpanFingerprintIndex::Remove(uint64_t chunk_id) {
  const auto it = fingerprints_of_chunk_.find(chunk_id);
  if (it == fingerprints_of_chunk_.end()) {
    return NotFoundError("chunk " + std::to_string(chunk_id) + " is not indexed");
  }
  for (uint64_t f : it->second) {
    const auto postings = chunks_of_fingerprint_.find(f);
    if (postings == chunks_of_fingerprint_.end()) continue;
    std::vector<uint64_t>& ids = postings->second;
    const auto at = std::find(ids.begin(), ids.end(), chunk_id);
    if (at != ids.end()) {
      *at = ids.back();
      ids.pop_back();
    }
    if (ids.empty()) chunks_of_fingerprint_.erase(postings);
  }
  num_postings_ -= static_cast<int64_t>(it->second.size());
  fingerprints_of_chunk_.erase(it);
  return Status::Ok();
}

int SpanFingerprintIndex::MaxDocumentFrequency() const {
  return std::max(options_.max_df_floor,
                  static_cast<int>(std::floor(options_.max_df_fraction * num_chunks())));
}

std::vector<SpanCandidate> SpanFingerprintIndex::FindCandidates(std::span<const int32_t> query,
                                                                int max_candidates) const {
  std::unordered_map<uint64_t, int> counts;
  const size_t max_df = static_cast<size_t>(MaxDocumentFrequency());
  for (uint64_t f : SpanFingerprints(query)) {
    const auto postings = chunks_of_fingerprint_.find(f);
    if (postings == chunks_of_fingerprint_.end() || postings->second.size() > max_df) continue;
    for (uint64_t id : postings->second) ++counts[id];
  }
  return RankSpanCandidates(counts, max_candidates);
}

}  // namespace reprise::kv
