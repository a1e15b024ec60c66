// The NEON sets' int8 peak loop, shared by the neon-dotprod (peak_loop_neon.cc: `sdot`) and
// neon-i8mm (peak_loop_neon_i8mm.cc: `smmla`) translation units, each of which includes it
// with its own flags and instruction: kAccumulators independent int32x4 accumulators, an empty
// asm barrier per round so the compiler keeps every instruction and the dependency chains.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace reprise::kernels {
namespace {

constexpr int kInt8PeakAccumulators = 8;

// `op(acc, a, b)` is the instruction under test (a multiply-add of int8 vectors into int32
// lanes); returns a sink of the accumulators so the loop is not optimized away.
template <class Op>
int64_t Int8PeakRounds(int64_t rounds, Op op) {
  int32x4_t acc[kInt8PeakAccumulators];
  for (auto& a : acc) a = vdupq_n_s32(0);
  int8x16_t a = vdupq_n_s8(1);
  int8x16_t b = vdupq_n_s8(2);
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile("" : "+w"(a), "+w"(b));
    for (int i = 0; i < kInt8PeakAccumulators; ++i) acc[i] = op(acc[i], a, b);
  }
  int64_t sink = 0;
  for (const int32x4_t v : acc) sink += vgetq_lane_s32(v, 0);
  return sink;
}

}  // namespace
}  // namespace reprise::kernels
