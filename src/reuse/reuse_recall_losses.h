// ClassifyRecallLosses: where reuse recall is lost (benchmarks only; issue 17). For every
// prompt token that the recall oracle (reuse_recall_oracle.h) counts as reusable but the plan
// left NEW, the first of these causes that explains it:
//
//  - last_token: the prompt's last token, always run (its logits start generation);
//  - matcher: a candidate the planner was given holds a window of `window` tokens around the
//    token, inside the unmatched run of its prompt chunk — the greedy matcher did not take it
//    (a longer span elsewhere took part of it, or the recursion limit);
//  - candidates_capped: such a chunk is cached, but ranked past `max_candidates`;
//  - prompt_chunk_split: a cached window covers the token only across a boundary between two
//    prompt chunks (the planner matches inside one chunk at a time);
//  - seam: a cached window covers the token only together with reused neighbours — what is
//    left at the edge of a match is shorter than a window (or tokenized otherwise there);
//  - cached_chunk_split: every earlier window around it spanned two chunks of the prompt it
//    came from (so no cached chunk can hold one): known only when `within_chunk` is given;
//  - not_cached: no cached chunk holds a window around it though one was seen inside a
//    chunk: evicted or never stored (or, without `within_chunk`, split as above).
//
// Reads the cache through FindCandidates only (no KV is loaded, no hit counted); call it
// after planning and before the prompt's own chunks are stored.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "kv/chunk_cache.h"
#include "reuse/reuse_planner.h"

namespace reprise::reuse {

// The reusable tokens of a prompt that were computed anew, by the first cause that explains
// each: the prompt's last token (always run); the matcher passed over a cached window; the
// chunk holding it ranked past max_candidates; a cached window only across two prompt chunks;
// only together with reused neighbours (a seam); every earlier window spanned two chunks of
// its prompt; no cached chunk holds it (evicted or never stored).
struct RecallLosses {
  int64_t last_token = 0;
  int64_t matcher = 0;
  int64_t candidates_capped = 0;
  int64_t prompt_chunk_split = 0;
  int64_t seam = 0;
  int64_t cached_chunk_split = 0;
  int64_t not_cached = 0;

  int64_t total() const {
    return last_token + matcher + candidates_capped + prompt_chunk_split + seam +
           cached_chunk_split + not_cached;
  }
  RecallLosses& operator+=(const RecallLosses& o);
};

// "seam 12, not cached 40, ..." (the causes with tokens, largest first), or "none".
std::string DescribeRecallLosses(const RecallLosses& losses);


struct RecallLossInputs {
  std::span<const int32_t> prompt;
  std::span<const TokenKind> kinds;     // the plan's label of every prompt token
  std::span<const PromptChunk> chunks;  // the prompt's chunks, as planned
  std::span<const uint8_t> reusable;    // the oracle's mask (ReuseRecallOracle::ReusableMask)
  int window = 32;                      // the oracle's window (= min_match_tokens)
  int max_candidates = 32;              // the planner's cap
  // Optional: the mask of an oracle that was given each earlier prompt chunk by chunk (a
  // window counts only if it lay inside one chunk). Empty = not known.
  std::span<const uint8_t> within_chunk;
};

// Errors: InvalidArgument when the spans' lengths differ from the prompt's (within_chunk may
// be empty), the chunks do not
// cover it, or window < 1.
Result<RecallLosses> ClassifyRecallLosses(const RecallLossInputs& in, kv::ChunkCache& cache);

}  // namespace reprise::reuse
