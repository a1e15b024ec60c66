#include "kv/rare_token_index.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"

namespace reprise::kv {
namespace {

// Sorted distinct tokens of `tokens`.
std::vector<int32_t> DistinctTokens(std::span<const int32_t> tokens) {
  std::vector<int32_t> distinct(tokens.begin(), tokens.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  return distinct;
}

}  // namespace

Result<RareTokenIndex> RareTokenIndex::Create(const RareTokenIndexOptions& options) {
  if (!(options.max_df_fraction > 0 && options.max_df_fraction <= 1)) {
    return InvalidArgumentError("rare token index: max_df_fraction must be in (0, 1]");
  }
  if (options.max_df_floor < 1) {
    return InvalidArgumentError("rare token index: max_df_floor must be at least 1");
  }
  return RareTokenIndex(options);
}

Status RareTokenIndex::Add(uint64_t chunk_id, std::span<const int32_t> tokens) {
  if (Contains(chunk_id)) {
    return InvalidArgumentError("rare token index: chunk " + std::to_string(chunk_id) +
                                " is already indexed");
  }
  uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(chunks_.size());
    chunks_.emplace_back();
  }
  Chunk& chunk = chunks_[slot];
  chunk.chunk_id = chunk_id;
  chunk.tokens = DistinctTokens(tokens);
  chunk.position.resize(chunk.tokens.size());
  for (size_t t = 0; t < chunk.tokens.size(); ++t) {
    std::vector<uint32_t>& posting = postings_[chunk.tokens[t]];
    chunk.position[t] = static_cast<uint32_t>(posting.size());
    posting.push_back(slot);
  }
  num_postings_ += static_cast<int64_t>(chunk.tokens.size());
  slot_of_chunk_.emplace(chunk_id, slot);
  return Status::Ok();
}

Status RareTokenIndex::Remove(uint64_t chunk_id) {
  const auto found = slot_of_chunk_.find(chunk_id);
  if (found == slot_of_chunk_.end()) {
    return NotFoundError("rare token index: chunk " + std::to_string(chunk_id) + " is not indexed");
  }
  const uint32_t slot = found->second;
  slot_of_chunk_.erase(found);
  Chunk& chunk = chunks_[slot];
  for (size_t t = 0; t < chunk.tokens.size(); ++t) {
    const auto posting_it = postings_.find(chunk.tokens[t]);
    REPRISE_CHECK(posting_it != postings_.end());
    std::vector<uint32_t>& posting = posting_it->second;
    const uint32_t position = chunk.position[t];
    REPRISE_DCHECK(posting[position] == slot);
    // Swap-remove, and tell the moved chunk where its entry went.
    const uint32_t moved_slot = posting.back();
    posting[position] = moved_slot;
    posting.pop_back();
    if (moved_slot != slot) {
      Chunk& moved = chunks_[moved_slot];
      const auto at = std::lower_bound(moved.tokens.begin(), moved.tokens.end(), chunk.tokens[t]);
      REPRISE_DCHECK(at != moved.tokens.end() && *at == chunk.tokens[t]);
      moved.position[static_cast<size_t>(at - moved.tokens.begin())] = position;
    }
    if (posting.empty()) postings_.erase(posting_it);
  }
  num_postings_ -= static_cast<int64_t>(chunk.tokens.size());
  chunk = Chunk{};  // frees its vectors
  free_slots_.push_back(slot);
  return Status::Ok();
}

int RareTokenIndex::DocumentFrequency(int32_t token) const {
  const auto found = postings_.find(token);
  return found == postings_.end() ? 0 : static_cast<int>(found->second.size());
}

int RareTokenIndex::MaxDocumentFrequency() const {
  const double by_fraction = options_.max_df_fraction * num_chunks();
  return std::max(options_.max_df_floor, static_cast<int>(by_fraction));
}

std::vector<RareTokenCandidate> RareTokenIndex::FindCandidates(std::span<const int32_t> query,
                                                               int max_candidates) const {
  std::vector<RareTokenCandidate> candidates;
  if (max_candidates <= 0 || slot_of_chunk_.empty()) return candidates;
  const double num_chunks_plus_one = num_chunks() + 1.0;
  const size_t max_df = static_cast<size_t>(MaxDocumentFrequency());

  // Per chunk slot, the running score. Every chunk's sum is taken over the query tokens in
  // ascending order, so equal token sets give bit-identical scores.
  struct Accumulator {
    double score = 0;
    int num_shared = 0;
  };
  std::vector<Accumulator> accumulators(chunks_.size());
  std::vector<uint32_t> touched;
  for (int32_t token : DistinctTokens(query)) {
    const auto found = postings_.find(token);
    if (found == postings_.end()) continue;
    const std::vector<uint32_t>& posting = found->second;
    if (posting.size() > max_df) continue;  // stop-word-like
    const double idf = std::log(num_chunks_plus_one / (static_cast<double>(posting.size()) + 0.5));
    for (uint32_t slot : posting) {
      Accumulator& accumulator = accumulators[slot];
      if (accumulator.num_shared == 0) touched.push_back(slot);
      accumulator.score += idf;
      ++accumulator.num_shared;
    }
  }

  candidates.reserve(touched.size());
  for (uint32_t slot : touched) {
    candidates.push_back(
        {chunks_[slot].chunk_id, accumulators[slot].score, accumulators[slot].num_shared});
  }
  const auto better = [](const RareTokenCandidate& a, const RareTokenCandidate& b) {
    return a.score != b.score ? a.score > b.score : a.chunk_id < b.chunk_id;
  };
  const size_t keep = std::min(candidates.size(), static_cast<size_t>(max_candidates));
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                    candidates.end(), better);
  candidates.resize(keep);
  return candidates;
}

}  // namespace reprise::kv
