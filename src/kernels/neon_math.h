// Inline NEON helpers shared by the *_neon.cc kernels: a vectorised exp, the same algorithm
// as avx2_math.h's so that every SIMD set agrees with the others to ~1e-7. Include only from
// translation units compiled with the NEON flags of their kernel set. Static: each
// translation unit keeps its own copy, compiled with its own flags.
#pragma once

#include <arm_neon.h>

namespace reprise::kernels::neon {

// e^x, relative error below 1e-7 for x in [-87, 88]; 0 below -87.33 (and for -inf), clamped
// at e^88 above. x = n ln2 + r with |r| <= ln2 / 2; e^r by its Taylor polynomial of degree
// 7 (Horner, FMA); 2^n built in the exponent field.
static inline float32x4_t Exp(float32x4_t x) {
  const float32x4_t min = vdupq_n_f32(-87.33f);
  const uint32x4_t underflow = vcltq_f32(x, min);
  x = vminq_f32(vmaxq_f32(x, min), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  // ln 2 split in two so that n * ln2_hi is exact.
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t result = vmulq_f32(p, vreinterpretq_f32_s32(bits));
  return vbslq_f32(underflow, vdupq_n_f32(0.0f), result);
}

}  // namespace reprise::kernels::neon
