// SpanFingerprintIndex: the in-memory candidate search for sub-chunk matches. For a prompt
// span that missed the prefix tree and the chunk hash, it names every cached chunk that
// shares a span of at least kGuaranteedSpanTokens tokens with it (and a few that share a
// shorter one): an inverted index from the winnowed n-gram fingerprints of each chunk
// (span_fingerprints.h) to the chunks holding them. The matcher then runs the exact longest
// common substring test (reuse/common_substring.h) on those candidates only.
//
// Candidates are ranked by the number of distinct fingerprints they share with the query
// (about the length of the shared text / 13 tokens), then by chunk id, so the order depends
// only on the indexed contents. A fingerprint held by more than
// max(max_df_floor, max_df_fraction * num_chunks) chunks is boilerplate (a chat template's
// markers, a repeated header) and is ignored: it would make every chunk a candidate.
//
// Memory: about 40 fingerprints per 512-token chunk, ~16 bytes each in the postings plus the
// chunk's own list: ~1.3 KB per chunk, 130 MB at 100,000 chunks.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace reprise::kv {

struct SpanFingerprintIndexOptions {
  double max_df_fraction = 0.05;  // in (0, 1]
  int max_df_floor = 16;          // >= 1
};

struct SpanCandidate {
  uint64_t chunk_id = 0;
  int num_shared = 0;  // distinct fingerprints (not ignored) shared with the query

  friend bool operator==(const SpanCandidate&, const SpanCandidate&) = default;
};

// Ranks `counts` (id -> shared fingerprints) best first — most shared, then lowest id — and
// keeps at most `max_candidates`. Also used by the store's catalog, whose ids are row ids.
std::vector<SpanCandidate> RankSpanCandidates(
    const std::unordered_map<uint64_t, int>& counts, int max_candidates);

// Thread-compatible: concurrent const calls are safe; Add and Remove need exclusive access.
class SpanFingerprintIndex {
 public:
  // Errors: InvalidArgument for options out of range.
  static Result<SpanFingerprintIndex> Create(const SpanFingerprintIndexOptions& options = {});

  // Indexes a chunk. Errors: InvalidArgument when chunk_id is already indexed.
  Status Add(uint64_t chunk_id, std::span<const int32_t> tokens);
  // Forgets a chunk. Errors: NotFound when it is not indexed.
  Status Remove(uint64_t chunk_id);

  // Up to max_candidates chunks sharing a fingerprint with `query`, best first.
  std::vector<SpanCandidate> FindCandidates(std::span<const int32_t> query,
                                            int max_candidates) const;

  bool Contains(uint64_t chunk_id) const { return fingerprints_of_chunk_.contains(chunk_id); }
  int num_chunks() const { return static_cast<int>(fingerprints_of_chunk_.size()); }
  int64_t num_postings() const { return num_postings_; }
  // Fingerprints held by more than this many chunks are ignored by FindCandidates.
  int MaxDocumentFrequency() const;

 private:
  explicit SpanFingerprintIndex(const SpanFingerprintIndexOptions& options)
      : options_(options) {}

  SpanFingerprintIndexOptions options_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> chunks_of_fingerprint_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> fingerprints_of_chunk_;
  int64_t num_postings_ = 0;
};

}  // namespace reprise::kv
