// The chunk-merge scheduler (docs/design.md §5; Algorithms 1-3 of the paper): given which tokens of
// a prompt are PREFIX-reused, NONPREFIX-reused or NEW, decides which compiled graph processes
// which consecutive tokens, so that the sum of the graph calls' latencies is least.
//
// Two graph kinds, each with a fixed capacity and a fixed latency per call (padding is free
// but wasted):
//   - prefill(Lp): any up to Lp non-prefix tokens, computed in full.
//   - recompute(Ls, r): selective recompute of reused tokens. Each NONPREFIX token uses one
//     unit of the Ls units. NEW tokens may ride along (they are always selected, so they are
//     computed exactly): a stretch of d consecutive NEW tokens uses ceil(d / r) units, and is
//     allowed only when d <= floor(r * c), c being the units left after the call's later
//     tokens (the paper's rule: forced NEW tokens may not crowd out the selection).
//     For integers d and c, d <= floor(r * c) exactly when ceil(d / r) <= c, so the rule
//     amounts to: a recompute call is valid iff its total units are <= Ls, in any order.
//     A call's tokens never outnumber its units, so it always fits the graph's Ls slots.
// PREFIX tokens need no call. The planner does no I/O, so the result is a pure function of
// the runs and the options and can be checked against brute force.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "reprise/defaults.h"
#include "reprise/types.h"

namespace reprise::reuse {

enum class RunKind : uint8_t { kPrefix, kNonPrefix, kNew };

// Tokens [begin, end) of the prompt, all of one kind.
struct TokenRun {
  RunKind kind = RunKind::kNew;
  int begin = 0;
  int end = 0;
};

// How the calls are chosen. kDp is the scheduler of docs/design.md §5; the others are the
// ablation's baselines (the seed's Figure 17), valid schedules under the same rules:
//  - kGreedy: tokens in order into the open call while it has room — reused tokens into a
//    recompute call, new tokens into the open recompute call as far as the ratio rule lets
//    them (the rest into prefill calls) — a new call whenever the open one cannot take more;
//  - kNaive: every run on its own — a reused run through recompute calls, a new run
//    through prefill calls, each as many calls as its length needs; nothing shared.
struct ChunkMergeOptions {
  int recompute_capacity = 0;       // Ls: capacity units of one recompute call, >= 1
  double recompute_latency_ms = 0;  // ts: latency of one recompute call, >= 0
  int prefill_capacity = 0;         // Lp: tokens of one prefill call, >= 1
  double prefill_latency_ms = 0;    // tp: latency of one prefill call, >= 0
  double recompute_ratio = kDefaultRecomputeRatio;  // r in (0, 1]
  ScheduleStrategy strategy = ScheduleStrategy::kDp;
};

enum class CallKind : uint8_t { kRecompute, kPrefill };

// One graph call over the prompt tokens [begin, end).
struct GraphCall {
  CallKind kind = CallKind::kPrefill;
  int begin = 0;
  int end = 0;
  int num_new = 0;
  int num_nonprefix = 0;
  // Prefill: tokens (end - begin) <= Lp. Recompute: units (NONPREFIX tokens plus
  // ceil(d / r) per stretch of d NEW tokens) <= Ls.
  int capacity_used = 0;
};

struct ChunkSchedule {
  // In token order; together they cover every non-prefix token exactly once.
  std::vector<GraphCall> calls;
  double total_latency_ms = 0;

  // One line per call, for traces and verbose output.
  std::string ToString() const;
};

// Thread-compatible; immutable after Create, so concurrent Schedule calls are safe.
class ChunkMergeScheduler {
 public:
  // Errors: InvalidArgument when a capacity is < 1, a latency negative or not finite, or the
  // ratio outside (0, 1].
  static Result<ChunkMergeScheduler> Create(const ChunkMergeOptions& options);

  const ChunkMergeOptions& options() const { return options_; }

  // The schedule of the prompt described by `runs`: with kDp the least-latency one.
  // Requires of runs: consecutive (runs[k].end == runs[k + 1].begin), starting at any
  // position >= 0, each non-empty, PREFIX runs only before all others. Adjacent runs of one
  // kind are merged first (a token's kind is all that matters), except by kNaive, which
  // gives each run as given its own calls. Among schedules of equal latency kDp prefers,
  // call by call from the end, prefill (exact) over recompute.
  // O(n + runs) time and O(n) memory, n the number of non-prefix tokens.
  // Errors: InvalidArgument when `runs` breaks the requirements (empty runs included).
  Result<ChunkSchedule> Schedule(std::span<const TokenRun> runs) const;

  // ceil(num_new / r): the units a stretch of `num_new` NEW tokens uses in a recompute call.
  // r is taken as exact to 1e-9 relative, so r = 0.3 makes 3 tokens use 10 units.
  int NewTokenUnits(int num_new) const;
  // floor(r * remaining_capacity): how many NEW tokens fit when `remaining_capacity` units
  // are left; always the largest d with NewTokenUnits(d) <= remaining_capacity.
  int MaxNewTokens(int remaining_capacity) const;

 private:
  explicit ChunkMergeScheduler(const ChunkMergeOptions& options) : options_(options) {}
  // The calls of each strategy over the non-prefix runs `work` (merged: kinds alternate) or
  // `given` (as given); kinds and bounds only.
  std::vector<GraphCall> DpCalls(const std::vector<TokenRun>& work, int prefix_end) const;
  std::vector<GraphCall> GreedyCalls(const std::vector<TokenRun>& work) const;
  std::vector<GraphCall> NaiveCalls(const std::vector<TokenRun>& given) const;

  ChunkMergeOptions options_;
};

}  // namespace reprise::reuse
