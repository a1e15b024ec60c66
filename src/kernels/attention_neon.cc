// The ARM NEON attention: attention_tiles.h on 128-bit vectors. Compiled with the NEON
// DotProd flags of its kernel set (it needs only Armv8-A's Advanced SIMD and its f16
// conversions); only NeonDotKernels() and NeonI8mmKernels() (the same attention) hand it out.

#include <arm_neon.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_tiles.h"
#include "kernels/kernel_impl.h"
#include "kernels/neon_math.h"

namespace reprise::kernels::neon {
namespace {

// 4 floats a vector; 32 registers: rows are computed 6 at a time (24 accumulators of 4
// vectors each, for scores and for V).
struct Neon {
  using F = float32x4_t;
  static constexpr int kWidth = 4;
  static constexpr int kScoreRows = 6;
  static constexpr int kValueRows = 6;
  static REPRISE_ALWAYS_INLINE F Zero() { return vdupq_n_f32(0.0f); }
  static REPRISE_ALWAYS_INLINE F Set1(float x) { return vdupq_n_f32(x); }
  static REPRISE_ALWAYS_INLINE F Broadcast(const float* p) { return vld1q_dup_f32(p); }
  static REPRISE_ALWAYS_INLINE F Load(const float* p) { return vld1q_f32(p); }
  static REPRISE_ALWAYS_INLINE F LoadHalf(const uint16_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  static REPRISE_ALWAYS_INLINE void Store(float* p, F x) { vst1q_f32(p, x); }
  static REPRISE_ALWAYS_INLINE F Fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static REPRISE_ALWAYS_INLINE F Mul(F a, F b) { return vmulq_f32(a, b); }
  static REPRISE_ALWAYS_INLINE F Add(F a, F b) { return vaddq_f32(a, b); }
  static REPRISE_ALWAYS_INLINE F Sub(F a, F b) { return vsubq_f32(a, b); }
  static REPRISE_ALWAYS_INLINE F Max(F a, F b) { return vmaxq_f32(a, b); }
  static REPRISE_ALWAYS_INLINE float ReduceMax(F x) { return vmaxvq_f32(x); }
  static REPRISE_ALWAYS_INLINE float ReduceAdd(F x) { return vaddvq_f32(x); }
  // e^x as the x86 kernels compute it (neon_math.h).
  static REPRISE_ALWAYS_INLINE F Exp(F x) { return neon::Exp(x); }
  // -inf where the slot is hidden from a query at `position`: visible iff
  // 0 <= slot position <= position.
  static REPRISE_ALWAYS_INLINE F Mask(F score, const int32_t* slot_positions, int32_t position) {
    const int32x4_t pos = vld1q_s32(slot_positions);
    const uint32x4_t visible =
        vandq_u32(vcleq_s32(pos, vdupq_n_s32(position)), vcgeq_s32(pos, vdupq_n_s32(0)));
    return vbslq_f32(visible, score, vdupq_n_f32(-INFINITY));
  }
  static REPRISE_ALWAYS_INLINE void Prefetch(const char* p) { __builtin_prefetch(p); }

  // kt[d * tile + j] = K[slot j][d] for j < count; zero for count <= j < tile. 4x4 blocks:
  // four slots' 4 dims, transposed in registers.
  static void LoadKTransposed(const uint16_t* k, int64_t hd, int64_t tile, int64_t count,
                              float* kt) {
    for (int64_t j0 = 0; j0 < tile; j0 += 4) {
      if (j0 >= count) {
        for (int64_t d = 0; d < hd; ++d) vst1q_f32(kt + d * tile + j0, Zero());
        continue;
      }
      for (int64_t d0 = 0; d0 < hd; d0 += 4) {
        F r[4];
        for (int64_t j = 0; j < 4; ++j) {
          r[j] = j0 + j < count ? LoadHalf(k + (j0 + j) * hd + d0) : Zero();
        }
        const F t0 = vtrn1q_f32(r[0], r[1]);  // r0[0] r1[0] r0[2] r1[2]
        const F t1 = vtrn2q_f32(r[0], r[1]);  // r0[1] r1[1] r0[3] r1[3]
        const F t2 = vtrn1q_f32(r[2], r[3]);
        const F t3 = vtrn2q_f32(r[2], r[3]);
        const float64x2_t a0 = vreinterpretq_f64_f32(t0);
        const float64x2_t a1 = vreinterpretq_f64_f32(t1);
        const float64x2_t a2 = vreinterpretq_f64_f32(t2);
        const float64x2_t a3 = vreinterpretq_f64_f32(t3);
        float* out = kt + d0 * tile + j0;
        vst1q_f32(out, vreinterpretq_f32_f64(vtrn1q_f64(a0, a2)));
        vst1q_f32(out + tile, vreinterpretq_f32_f64(vtrn1q_f64(a1, a3)));
        vst1q_f32(out + 2 * tile, vreinterpretq_f32_f64(vtrn2q_f64(a0, a2)));
        vst1q_f32(out + 3 * tile, vreinterpretq_f32_f64(vtrn2q_f64(a1, a3)));
      }
    }
  }

  // vt[j * stride + d] = V[slot j][d] for j < count, d < hd.
  static void LoadV(const uint16_t* v, int64_t hd, int64_t stride, int64_t count, float* vt) {
    for (int64_t j = 0; j < count; ++j) {
      for (int64_t d = 0; d < hd; d += 4) vst1q_f32(vt + j * stride + d, LoadHalf(v + j * hd + d));
    }
  }
};

}  // namespace

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl<Neon>(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::neon
