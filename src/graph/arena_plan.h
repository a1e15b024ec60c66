// ArenaPlan: places every intermediate buffer of a compiled graph in one arena.
//
// Each buffer has a size and a lifetime (the first and last op that touch it). Buffers whose
// lifetimes overlap get disjoint byte ranges; others may share bytes. Placement is greedy
// best-fit in order of decreasing size, which is near optimal for the short, regular op lists
// of a transformer. Everything is decided at compile time; running a graph only adds offsets
// to the arena's base pointer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reprise::graph {

inline constexpr int64_t kArenaAlignment = 64;  // a cache line; enough for any SIMD load

struct BufferRequest {
  std::string name;  // for dumps and errors
  int64_t size_bytes = 0;
  int first_op = 0;  // lifetime [first_op, last_op], inclusive
  int last_op = 0;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // [num_buffers], multiples of kArenaAlignment
  int64_t arena_bytes = 0;
  int64_t sum_of_buffer_bytes = 0;  // without sharing, for reports
};

// Requires: every size >= 0 and first_op <= last_op.
ArenaPlan PlanArena(const std::vector<BufferRequest>& buffers);

// True when no two buffers with overlapping lifetimes overlap in the arena (for tests and
// debug checks).
bool IsValidPlan(const std::vector<BufferRequest>& buffers, const ArenaPlan& plan);

}  // namespace reprise::graph
