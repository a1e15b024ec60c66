// ARM NEON row kernels (elementwise.h, activation_quant.h). Compiled with the NEON DotProd
// flags of its kernel set (it needs only Armv8-A's Advanced SIMD and its f16 conversions);
// only NeonDotKernels() and NeonI8mmKernels() (the same row kernels) hand it out. Tails
// shorter than a vector go through the scalar kernels, so every length is accepted.

#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/neon_math.h"

namespace reprise::kernels::neon {
namespace {

// Saturates 16 int32 values to int8, in order.
inline int8x16_t NarrowToBytes(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  const int16x8_t ab = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
  const int16x8_t cd = vcombine_s16(vqmovn_s32(c), vqmovn_s32(d));
  return vcombine_s8(vqmovn_s16(ab), vqmovn_s16(cd));
}

// Quantizes 32 values held in eight vectors: the same d, products and rounding (nearest
// even) as scalar::QuantizeRow, so the bytes are identical. The max ignores NaNs as the
// scalar fmax does (maxnm, not max).
inline void QuantizeBlock(const float32x4_t (&v)[8], int8_t* q, float* d_out, int32_t* sum_out) {
  float32x4_t amax = vabsq_f32(v[0]);
  for (int i = 1; i < 8; ++i) amax = vmaxnmq_f32(amax, vabsq_f32(v[i]));
  const float d = vmaxnmvq_f32(amax) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float32x4_t scale = vdupq_n_f32(id);
  int32x4_t ints[8];
  for (int i = 0; i < 8; ++i) ints[i] = vcvtnq_s32_f32(vmulq_f32(v[i], scale));
  int32x4_t sum = vaddq_s32(ints[0], ints[1]);
  for (int i = 2; i < 8; ++i) sum = vaddq_s32(sum, ints[i]);
  vst1q_s8(q, NarrowToBytes(ints[0], ints[1], ints[2], ints[3]));
  vst1q_s8(q + 16, NarrowToBytes(ints[4], ints[5], ints[6], ints[7]));
  *d_out = d;
  *sum_out = vaddvq_s32(sum);
}

inline void StoreBlockMeta(uint8_t* dst, int64_t k, int64_t b, float d, int32_t sum) {
  std::memcpy(dst + k + 4 * b, &d, sizeof(d));
  std::memcpy(dst + k + k / kActivationBlock * 4 + 4 * b, &sum, sizeof(sum));
}

// Four accumulators hide the FMA latency; the order of the sum differs from scalar's, within
// the tests' 1e-6.
float InverseRms(const float* x, int64_t k, float eps) {
  float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    for (int j = 0; j < 4; ++j) {
      const float32x4_t v = vld1q_f32(x + i + 4 * j);
      acc[j] = vfmaq_f32(acc[j], v, v);
    }
  }
  for (; i + 4 <= k; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    acc[0] = vfmaq_f32(acc[0], v, v);
  }
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
  for (; i < k; ++i) sum += x[i] * x[i];
  return 1.0f / std::sqrt(sum / static_cast<float>(k) + eps);
}

}  // namespace

void QuantizeRow(const float* x, int64_t k, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  for (int64_t b = 0; b < k / kActivationBlock; ++b) {
    const float* src = x + b * kActivationBlock;
    float32x4_t v[8];
    for (int j = 0; j < 8; ++j) v[j] = vld1q_f32(src + 4 * j);
    float d;
    int32_t sum;
    QuantizeBlock(v, reinterpret_cast<int8_t*>(dst) + b * kActivationBlock, &d, &sum);
    StoreBlockMeta(dst, k, b, d, sum);
  }
}

void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst) {
  const float32x4_t scale = vdupq_n_f32(inv_scale);
  const float32x4_t lo = vdupq_n_f32(-127.0f);
  const float32x4_t hi = vdupq_n_f32(127.0f);
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    int32x4_t ints[4];
    for (int j = 0; j < 4; ++j) {
      // maxnm returns the number when the other operand is a quiet NaN (the product of a
      // NaN always is one): a NaN becomes -127, as in the scalar twin (fmax).
      const float32x4_t v = vmaxnmq_f32(vmulq_f32(vld1q_f32(x + i + 4 * j), scale), lo);
      ints[j] = vcvtnq_s32_f32(vminnmq_f32(v, hi));
    }
    vst1q_s8(dst + i, NarrowToBytes(ints[0], ints[1], ints[2], ints[3]));
  }
  if (i < k) scalar::StaticQuantizeRow(x + i, k - i, inv_scale, dst + i);
}

void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out) {
  const float inv = InverseRms(x, k, eps);
  const float32x4_t vinv = vdupq_n_f32(inv);
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    const float32x4_t v = vmulq_f32(vld1q_f32(x + i), vinv);
    vst1q_f32(out + i, vmulq_f32(v, vld1q_f32(weight + i)));
  }
  for (; i < k; ++i) out[i] = x[i] * inv * weight[i];
}

void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  const float32x4_t vinv = vdupq_n_f32(InverseRms(x, k, eps));
  for (int64_t b = 0; b < k / kActivationBlock; ++b) {
    const int64_t i = b * kActivationBlock;
    float32x4_t v[8];
    for (int j = 0; j < 8; ++j) {
      v[j] = vmulq_f32(vmulq_f32(vld1q_f32(x + i + 4 * j), vinv), vld1q_f32(weight + i + 4 * j));
    }
    float d;
    int32_t sum;
    QuantizeBlock(v, reinterpret_cast<int8_t*>(dst) + i, &d, &sum);
    StoreBlockMeta(dst, k, b, d, sum);
  }
}

void Rope(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim, const float* cos,
          const float* sin, RopeStyle style) {
  REPRISE_DCHECK(rot_dim % 2 == 0);
  const int64_t half = rot_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* head = x + h * head_stride;
    int64_t i = 0;  // pair index
    if (style == RopeStyle::kInterleaved) {
      for (; i + 4 <= half; i += 4) {
        // ld2 splits (a0 b0 a1 b1 ...) into a and b; st2 interleaves them back.
        const float32x4_t c = vld1q_f32(cos + i);
        const float32x4_t s = vld1q_f32(sin + i);
        const float32x4x2_t ab = vld2q_f32(head + 2 * i);
        float32x4x2_t rotated;
        rotated.val[0] = vfmsq_f32(vmulq_f32(ab.val[0], c), ab.val[1], s);
        rotated.val[1] = vfmaq_f32(vmulq_f32(ab.val[1], c), ab.val[0], s);
        vst2q_f32(head + 2 * i, rotated);
      }
      for (; i < half; ++i) {
        const float a = head[2 * i];
        const float b = head[2 * i + 1];
        head[2 * i] = a * cos[i] - b * sin[i];
        head[2 * i + 1] = a * sin[i] + b * cos[i];
      }
    } else {
      for (; i + 4 <= half; i += 4) {
        const float32x4_t c = vld1q_f32(cos + i);
        const float32x4_t s = vld1q_f32(sin + i);
        const float32x4_t a = vld1q_f32(head + i);
        const float32x4_t b = vld1q_f32(head + half + i);
        vst1q_f32(head + i, vfmsq_f32(vmulq_f32(a, c), b, s));
        vst1q_f32(head + half + i, vfmaq_f32(vmulq_f32(b, c), a, s));
      }
      for (; i < half; ++i) {
        const float a = head[i];
        const float b = head[i + half];
        head[i] = a * cos[i] - b * sin[i];
        head[i + half] = a * sin[i] + b * cos[i];
      }
    }
  }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t u = vld1q_f32(up + i);
    const float32x4_t e = Exp(vnegq_f32(g));
    vst1q_f32(out + i, vmulq_f32(vdivq_f32(g, vaddq_f32(one, e)), u));
  }
  if (i < n) scalar::SiluMul(gate + i, up + i, n - i, out + i);
}

void Softmax(float* x, int64_t n) {
  int64_t i = 0;
  float32x4_t vmax = vdupq_n_f32(-INFINITY);
  for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
  float max = vmaxvq_f32(vmax);
  for (; i < n; ++i) max = std::fmax(max, x[i]);
  const float32x4_t vm = vdupq_n_f32(max);
  float32x4_t vsum = vdupq_n_f32(0.0f);
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t e = Exp(vsubq_f32(vld1q_f32(x + i), vm));
    vst1q_f32(x + i, e);
    vsum = vaddq_f32(vsum, e);
  }
  float sum = vaddvq_f32(vsum);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const float32x4_t vinv = vdupq_n_f32(inv);
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void Add(const float* a, const float* b, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// fcvtn rounds by FPCR (nearest even on Linux) and keeps subnormal halves (FZ16 is off), as
// F32ToF16 does; a NaN keeps the top of its payload, as F16C does on x86.
void F32ToF16Row(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(x + i)), vld1q_f32(x + i + 4));
    vst1q_u16(out + i, vreinterpretq_u16_f16(h));
  }
  if (i < n) scalar::F32ToF16Row(x + i, n - i, out + i);
}

void F16ToF32Row(const uint16_t* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(x + i));
    vst1q_f32(out + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(out + i + 4, vcvt_high_f32_f16(h));
  }
  if (i < n) scalar::F16ToF32Row(x + i, n - i, out + i);
}

}  // namespace reprise::kernels::neon
