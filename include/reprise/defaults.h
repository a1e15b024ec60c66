// The defaults (and a limit) that several layers state — the public options, the C API, the command line
// and the internal options of the engine, reuse and model layers — written once. Each of them
// names the constant here rather than repeating its value (docs/design.md §2 says what each
// setting does; docs/benchmarks.md how the values were chosen).
//
// This header includes nothing and may be included by every layer.
#pragma once

namespace reprise {

// Blend's recompute ratio r: the share of a recompute call's capacity spent on reused tokens
// ("Choosing r" in docs/benchmarks.md).
inline constexpr double kDefaultRecomputeRatio = 0.25;

// The least deviation at which a token of stable context (a moved chat window) is recomputed
// by the bounded repair ("A chat whose window moves" in docs/benchmarks.md).
inline constexpr double kDefaultStableRecomputeMinDeviation = 0.003;

// The most prompt tokens the query-aware selection's probe runs (ReuseTuning::
// query_probe_tokens): the rows of the graphs' probe (graph::kMaxProbeRows).
inline constexpr int kMaxQueryProbeTokens = 64;

// The store's remote tier (a Redis shared by several servers): the longest wait for the server
// on one operation, and how long its entries live.
inline constexpr int kDefaultRemoteTimeoutMs = 50;
inline constexpr long long kDefaultRemoteTtlSeconds = 7LL * 24 * 3600;

}  // namespace reprise
