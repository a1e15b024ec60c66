// Prefetch selection (docs/design.md §6; the paper's Appendix G.1): in idle time the store loads
// from flash into the memory pool the chunks a request is likely to need next.
//
// A candidate qualifies when its prefetch score — spatial and semantic locality only
// (LocalityModel::PrefetchScore), not temporal, so that a chunk is not reloaded merely
// because it was used once — reaches the threshold. Qualifying chunks are taken best first
// (ties: exact chunks first, then lower id) while they fit the byte budget; one that does
// not fit is skipped and smaller ones after it may still fit.
//
// By default only exact (prefix-reusable) chunks are candidates: a non-prefix chunk's load
// overlaps the selective recompute (docs/design.md §7), so prefetching it gains nothing and
// pollutes the pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/locality.h"

namespace reprise::store {

struct PrefetchOptions {
  // Minimum prefetch score, in [0, 1]. With the default equal spatial and semantic weights,
  // 0.25 takes a chunk whose document (or prefix-tree parent) was used about one recency
  // half-life ago, or one co-accessed (decayed count >= 1) with a chunk just used: one clear
  // signal, or two weaker ones together.
  double threshold = 0.25;
  bool exact_only = true;
};

struct PrefetchSelection {
  std::vector<uint64_t> ids;  // best first
  int64_t bytes = 0;          // their total, <= the budget
};

// `candidates`: chunks on flash; those already in the pool (in_pool) are skipped.
PrefetchSelection SelectPrefetch(std::span<const ChunkInfo> candidates, const LocalityModel& model,
                                 double now_s, int64_t budget_bytes,
                                 const PrefetchOptions& options);

}  // namespace reprise::store
