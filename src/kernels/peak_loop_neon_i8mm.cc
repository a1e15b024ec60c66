// The neon-i8mm set's int8 peak loop: `smmla` (a 2 x 8 by 8 x 2 int8 matrix product added into
// a 2 x 2 int32 block: 32 multiply-adds per instruction) on 8 independent accumulators.
// Intrinsics with an empty asm barrier, as in peak_loop_neon.cc, so the compiler keeps every
// instruction and the dependency chains. Compiled with the I8MM flags; its float loop is the
// neon-dotprod set's.
#include <arm_neon.h>

#include "kernels/kernel_impl.h"

namespace reprise::kernels::neon_i8mm {
namespace {

constexpr int kAccumulators = 8;

// Each smmla adds 8 x 1 x 2 = 16 to every int32 lane.
int64_t Int8Loop(int64_t rounds) {
  int32x4_t acc[kAccumulators];
  for (auto& a : acc) a = vdupq_n_s32(0);
  int8x16_t a = vdupq_n_s8(1);
  int8x16_t b = vdupq_n_s8(2);
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile("" : "+w"(a), "+w"(b));
    for (int i = 0; i < kAccumulators; ++i) acc[i] = vmmlaq_s32(acc[i], a, b);
  }
  int64_t sink = 0;
  for (const int32x4_t v : acc) sink += vgetq_lane_s32(v, 0);
  return sink;
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"smmla (NEON I8MM)", kAccumulators * 32, Int8Loop}; }

}  // namespace reprise::kernels::neon_i8mm
