// Eviction costs: what removing a chunk from a tier of the store costs a future request, in
// milliseconds of TTFT (docs/design.md §6; the paper's Appendix F, equations 7-9). The
// cost-aware eviction policy (eviction_policy.h) ranks chunks by locality score x cost.
//
//  - Memory pool (a copy stays on flash): the time to reload the chunk from flash,
//    bytes / read bandwidth, for a prefix-reusable (`exact`) chunk, whose KV is needed
//    before its successors can compute; ~0 for a non-prefix chunk, whose load overlaps the
//    selective recompute.
//  - Flash (the last copy): the chunk's own recompute, num_tokens x compute cost per token,
//    plus the cascade: every descendant in the prefix tree that reaches the root through
//    exact chunks only would lose prefix reusability and fall back to non-prefix reuse, so
//    each adds  hit frequency x num_tokens x (non-prefix minus prefix reuse cost per token).
//    A non-exact chunk has no cascade (its subtree is non-prefix already), and the walk stops
//    at non-exact descendants for the same reason.
//    A redundant copy loses no content: when several chunks of the tier have the same
//    `content` hash, the primary (exact first, then lowest id) costs its recompute and each
//    other copy only what its prefix reuse would lose, num_tokens x the non-prefix extra
//    when exact (0 when not), plus its cascade.
// Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "store/locality.h"

namespace reprise::store {

// The tier a chunk would be evicted from. kFlash stands for whichever tier holds the last
// copy (a memory-only store evicts with flash semantics: a victim must be recomputed).
enum class StoreTier : uint8_t { kPool, kFlash };

struct CostModel {
  double read_bytes_per_ms = 0;     // flash -> pool read bandwidth, > 0
  double compute_ms_per_token = 0;  // full prefill of one token, >= 0
  // Non-prefix reuse of a token (re-rotation + selective recompute) minus prefix reuse
  // (nothing), e.g. compute_ms_per_token x (recompute ratio + 1 / num_layers), >= 0.
  double nonprefix_extra_ms_per_token = 0;
};

// Errors: InvalidArgument naming the field.
Status ValidateCostModel(const CostModel& costs);

// Equation 7: reload time for an exact chunk, 0 for a non-exact one.
double PoolEvictionCostMs(const ChunkInfo& chunk, const CostModel& costs);

// Equations 8-9 for every chunk of `chunks` (the flash tier), in the same order. The prefix
// tree is the one the chunks' parent links form among themselves; a parent outside the span
// ends a path (as the root does). Descendants are weighted by model.HitFrequency(chunk, now_s).
// Requires: chunk ids unique (checked).
std::vector<double> FlashEvictionCostsMs(std::span<const ChunkInfo> chunks, const CostModel& costs,
                                         const LocalityModel& model, double now_s);

// Dispatches on the tier: PoolEvictionCostMs per chunk, or FlashEvictionCostsMs.
std::vector<double> EvictionCostsMs(std::span<const ChunkInfo> chunks, StoreTier tier,
                                    const CostModel& costs, const LocalityModel& model,
                                    double now_s);

// For each chunk: whether any other chunk of the span names it as parent.
std::vector<bool> HasChildren(std::span<const ChunkInfo> chunks);

}  // namespace reprise::store
