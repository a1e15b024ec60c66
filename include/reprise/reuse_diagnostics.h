// What a request's reuse did, in detail (reprise::GenerateRequest::diagnose): the plan, the
// graph calls, and where a recall oracle's reusable tokens were lost. Part of the public API
// (reprise/engine.h includes it); the reuse layer computes the losses into the same struct.
// This header includes nothing of Reprise's sources.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace reprise {

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

// What a request's reuse did, in detail (GenerateRequest::diagnose).
struct ReuseDiagnostics {
  std::string plan;                   // the plan in one line: runs of prefix, reused and new tokens
  std::string schedule;               // blend's graph calls, when it scheduled any
  int graph_calls = 0;                // prefill, recompute and probe calls
  double max_residual_deviation = 0;  // blend: the largest over its recompute calls
  // Beside the graphs: placing reused KV, and waiting for the store's reads.
  double kv_place_ms = 0;
  double kv_load_wait_ms = 0;
  double store_ms = 0;                      // keeping the prompt's chunks, after the first token
  std::vector<std::pair<int, int>> chunks;  // the prompt's chunks, [begin, end) in tokens
  bool has_recall_losses = false;           // GenerateRequest::expected_reusable was given
  RecallLosses recall_losses;
};

}  // namespace reprise
