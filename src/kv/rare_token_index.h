// RareTokenIndex: the in-memory "keyword candidates" step of non-prefix matching (DESIGN.md
// §6 "Matching"). For a new prompt chunk that missed the prefix tree and the chunk hash, it
// names the few cached chunks most likely to share a long token substring with it; the
// matcher then runs the exact longest-common-substring test (reuse/common_substring.h) on
// those candidates only.
//
// It is an inverted index from token id to the chunks that contain it. A candidate's score is
// the sum, over the DISTINCT query tokens it contains, of the token's inverse document
// frequency idf = log((N + 1) / (df + 0.5)) (N chunks indexed, df of them holding the token;
// this is BM25's idf, log(1 + (N - df + 0.5) / (df + 0.5)), which is always > 0). Why:
// idf is about -log P(a random chunk holds the token), so the score is about -log of the
// chance that the chunk shares all those tokens by accident: a long shared span brings many
// rare tokens and a large score, while common tokens add little. Term frequency and chunk
// length (BM25's other parts) are left out: a repeated token says nothing more about a shared
// span, and chunks are bounded (512 tokens). Tokens held by more than a fraction of the
// chunks (stop-word-like: "the", ",", newline) are ignored outright, both for speed (their
// posting lists are the longest) and because otherwise every chunk would be a candidate.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace reprise::kv {

struct RareTokenIndexOptions {
  // FindCandidates ignores a token held by more than
  // max(max_df_floor, max_df_fraction * num_chunks) chunks. The floor keeps small indexes,
  // where every token is in a large fraction of the chunks, useful.
  double max_df_fraction = 0.05;  // in (0, 1]
  int max_df_floor = 16;          // >= 1
};

struct RareTokenCandidate {
  uint64_t chunk_id = 0;
  double score = 0;           // sum of the idf of the shared distinct tokens, > 0
  int num_shared_tokens = 0;  // distinct query tokens (not ignored) the chunk holds

  friend bool operator==(const RareTokenCandidate&, const RareTokenCandidate&) = default;
};

// Owns its postings. Thread-compatible: concurrent const calls (FindCandidates) are safe;
// Add and Remove need exclusive access. Memory: about 12 bytes per distinct (token, chunk)
// pair, plus a hash-map node per distinct token and per chunk.
class RareTokenIndex {
 public:
  // Errors: InvalidArgument for options out of range.
  static Result<RareTokenIndex> Create(const RareTokenIndexOptions& options = {});

  // Indexes the distinct tokens of a chunk. An empty chunk counts in N but matches nothing.
  // Errors: InvalidArgument when chunk_id is already indexed.
  Status Add(uint64_t chunk_id, std::span<const int32_t> tokens);

  // Forgets a chunk (the cache evicted it). Errors: NotFound when it is not indexed.
  Status Remove(uint64_t chunk_id);

  // Up to max_candidates chunks sharing at least one non-ignored token with `query`, best
  // first: by score descending, then chunk_id ascending, so the order depends only on the
  // indexed contents, never on the order of Add and Remove calls. Allocates O(num_chunks).
  std::vector<RareTokenCandidate> FindCandidates(std::span<const int32_t> query,
                                                 int max_candidates) const;

  bool Contains(uint64_t chunk_id) const { return slot_of_chunk_.contains(chunk_id); }
  int num_chunks() const { return static_cast<int>(slot_of_chunk_.size()); }
  // The number of indexed chunks holding `token`.
  int DocumentFrequency(int32_t token) const;
  // Distinct (token, chunk) pairs held.
  int64_t num_postings() const { return num_postings_; }
  // Tokens with a document frequency above this are ignored by FindCandidates.
  int MaxDocumentFrequency() const;

 private:
  // One indexed chunk. tokens is sorted and distinct; chunk occupies postings
  // position[t] of the posting list of tokens[t].
  struct Chunk {
    uint64_t chunk_id = 0;
    std::vector<int32_t> tokens;
    std::vector<uint32_t> position;
  };

  explicit RareTokenIndex(const RareTokenIndexOptions& options) : options_(options) {}

  RareTokenIndexOptions options_;
  // Chunks by slot; slots of removed chunks are reused (free_slots_ is a stack).
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<uint64_t, uint32_t> slot_of_chunk_;
  // token -> slots of the chunks holding it, in no particular order. Never empty.
  std::unordered_map<int32_t, std::vector<uint32_t>> postings_;
  int64_t num_postings_ = 0;
};

}  // namespace reprise::kv
