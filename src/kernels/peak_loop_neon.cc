// The NEON set's peak loops: `sdot` (int8 dot products into int32 lanes: 16 multiply-adds per
// instruction; the shared loop of peak_loop_neon_int8.h) and `fmla` on 4 float lanes, each on
// 8 independent accumulators. Intrinsics with empty asm barriers, so the compiler keeps every
// instruction and the dependency chains.
#include <arm_neon.h>

#include "kernels/kernel_impl.h"
#include "kernels/peak_loop_neon_int8.h"

namespace reprise::kernels::neon {
namespace {

constexpr int kAccumulators = 8;

// Each sdot is 16 multiply-adds.
int64_t Int8Loop(int64_t rounds) {
  return Int8PeakRounds(
      rounds, [](int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); });
}

int64_t Float32Loop(int64_t rounds) {
  float32x4_t acc[kAccumulators];
  for (auto& a : acc) a = vdupq_n_f32(0.0f);
  float32x4_t a = vdupq_n_f32(1.0f);
  float32x4_t b = vdupq_n_f32(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile("" : "+w"(a), "+w"(b));
    for (int i = 0; i < kAccumulators; ++i) acc[i] = vfmaq_f32(acc[i], a, b);
  }
  float sink = 0;
  for (const float32x4_t v : acc) sink += vgetq_lane_f32(v, 0);
  return static_cast<int64_t>(sink);
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"sdot (NEON)", kInt8PeakAccumulators * 16, Int8Loop}; }
PeakLoop Float32PeakLoop() { return {"fmla 4s (NEON)", kAccumulators * 4, Float32Loop}; }

}  // namespace reprise::kernels::neon
