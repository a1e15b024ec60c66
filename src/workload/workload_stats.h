// Reuse statistics of a workload: how much of each prompt an engine could take from earlier
// requests, split into prefix reuse (lossless) and non-prefix reuse (docs/design.md §2).
//
// The counts are at segment granularity: a segment is reusable when a segment with the same
// source_id appeared in an earlier request. The engine's own matching works on token chunks,
// so its hit rates can differ slightly (e.g. a question that shares leading words).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "workload/request.h"

namespace reprise::workload {

struct WorkloadStats {
  // Filled by ComputeReuseStats.
  int num_requests = 0;
  int64_t num_context_segments = 0;           // document/turn/skill segment occurrences
  int64_t num_repeated_context_segments = 0;  // ... whose source_id was in an earlier request
  int num_distinct_context_sources = 0;
  int64_t num_prompt_tokens = 0;  // sum over requests of CountPromptTokens
  int max_request_prompt_tokens = 0;
  // Tokens of each request's longest run of leading segments equal (by source) to the
  // leading segments of an earlier request: what a prefix cache serves.
  int64_t num_prefix_reusable_tokens = 0;
  // Tokens of the segments after that run whose source_id appeared in an earlier request
  // (at any position): what only non-prefix reuse can serve.
  int64_t num_nonprefix_reusable_tokens = 0;

  // Filled by the builders.
  int num_collection_chunks = 0;  // chunks the requests could draw from
  int num_skipped_requests = 0;   // did not fit max_prompt_tokens even without context
  int num_dropped_segments = 0;   // context segments removed by the max_prompt_tokens guard

  // num_repeated_context_segments / num_context_segments (0 when there are none).
  double RepeatedContextFraction() const;
  double AvgPromptTokens() const;
  double PrefixReusableFraction() const;     // of all prompt tokens
  double NonprefixReusableFraction() const;  // of all prompt tokens
};

// Computes the fields marked "Filled by ComputeReuseStats" over `requests` in order. Segments
// with an empty source_id (the question) are never reusable. Requires: equal non-empty
// source_ids carry equal texts (checked).
WorkloadStats ComputeReuseStats(std::span<const Request> requests,
                                const CountTokensFn& count_tokens);

// A few human-readable lines, for `reprise bench reuse` and logs.
std::string FormatWorkloadStats(const WorkloadStats& stats);

}  // namespace reprise::workload
