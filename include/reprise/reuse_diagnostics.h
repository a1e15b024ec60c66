// What a request's reuse did, in detail (reprise::GenerateRequest::diagnose): the plan, the
// graph calls, where the time beside them went. Part of the public API (reprise/engine.h
// includes it). Where a recall oracle's reusable tokens were lost is benchmarks' business
// (engine/recall_probe.h), not the product's.
// This header includes nothing of Reprise's sources.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace reprise {

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
};

}  // namespace reprise
