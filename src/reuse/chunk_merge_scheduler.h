// The chunk-merge scheduler (DESIGN.md §5; Algorithms 1-3 of the paper): given which tokens of
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
#include <vector>

#include "base/status.h"

namespace reprise::reuse {

enum class RunKind : uint8_t { kPrefix, kNonPrefix, kNew };

// Tokens [begin, end) of the prompt, all of one kind.
struct TokenRun {
  RunKind kind = RunKind::kNew;
  int begin = 0;
  int end = 0;
};

struct ChunkMergeOptions {
  int recompute_capacity = 0;       // Ls: capacity units of one recompute call, >= 1
  double recompute_latency_ms = 0;  // ts: latency of one recompute call, >= 0
  int prefill_capacity = 0;         // Lp: tokens of one prefill call, >= 1
  double prefill_latency_ms = 0;    // tp: latency of one prefill call, >= 0
  double recompute_ratio = 0.25;    // r in (0, 1]
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

  // The least-latency schedule of the prompt described by `runs`.
  // Requires of runs: consecutive (runs[k].end == runs[k + 1].begin), starting at any
  // position >= 0, each non-empty, PREFIX runs only before all others. Adjacent runs of one
  // kind are merged first (a token's kind is all that matters). Among schedules of equal
  // latency it prefers, call by call from the end, prefill (exact) over recompute.
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

  ChunkMergeOptions options_;
};

}  // namespace reprise::reuse
