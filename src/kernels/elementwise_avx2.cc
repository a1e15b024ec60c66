// AVX2 row kernels (elementwise.h, activation_quant.h). Tails shorter than a vector go
// through the scalar kernels, so every length is accepted.

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/avx2_math.h"
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx2 {
namespace {

// Quantizes 32 values held in four vectors: the same d, products and rounding (nearest
// even, the MXCSR default) as scalar::QuantizeRow, so the bytes are identical.
inline void QuantizeBlock(const __m256 (&v)[4], int8_t* q, float* d_out, int32_t* sum_out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_andnot_ps(sign_mask, v[0]);
  for (int i = 1; i < 4; ++i) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[i]));
  const float max_value = HorizontalMax(amax);
  const float d = max_value / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 scale = _mm256_set1_ps(id);
  __m256i ints[4];
  for (int i = 0; i < 4; ++i) ints[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], scale));
  const __m256i sum =
      _mm256_add_epi32(_mm256_add_epi32(ints[0], ints[1]), _mm256_add_epi32(ints[2], ints[3]));
  // packs work within 128-bit lanes: the 32-bit order after both packs is
  // [0 2 4 6 1 3 5 7] of 4-byte groups; one permute restores it.
  const __m256i words01 = _mm256_packs_epi32(ints[0], ints[1]);
  const __m256i words23 = _mm256_packs_epi32(ints[2], ints[3]);
  const __m256i bytes = _mm256_packs_epi16(words01, words23);
  const __m256i ordered =
      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
  *d_out = d;
  *sum_out = HorizontalSum(sum);
}

inline void StoreBlockMeta(uint8_t* dst, int64_t k, int64_t b, float d, int32_t sum) {
  std::memcpy(dst + k + 4 * b, &d, sizeof(d));
  std::memcpy(dst + k + k / kActivationBlock * 4 + 4 * b, &sum, sizeof(sum));
}

float InverseRms(const float* x, int64_t k, float eps) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    for (int j = 0; j < 4; ++j) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * j);
      acc[j] = _mm256_fmadd_ps(v, v, acc[j]);
    }
  }
  for (; i + 8 <= k; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc[0] = _mm256_fmadd_ps(v, v, acc[0]);
  }
  float sum =
      HorizontalSum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < k; ++i) sum += x[i] * x[i];
  return 1.0f / std::sqrt(sum / static_cast<float>(k) + eps);
}

}  // namespace

void QuantizeRow(const float* x, int64_t k, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  for (int64_t b = 0; b < k / kActivationBlock; ++b) {
    const float* src = x + b * kActivationBlock;
    const __m256 v[4] = {_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8), _mm256_loadu_ps(src + 16),
                         _mm256_loadu_ps(src + 24)};
    float d;
    int32_t sum;
    QuantizeBlock(v, reinterpret_cast<int8_t*>(dst) + b * kActivationBlock, &d, &sum);
    StoreBlockMeta(dst, k, b, d, sum);
  }
}

void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst) {
  const __m256 scale = _mm256_set1_ps(inv_scale);
  const __m256 lo = _mm256_set1_ps(-127.0f);
  const __m256 hi = _mm256_set1_ps(127.0f);
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    __m256i ints[4];
    for (int j = 0; j < 4; ++j) {
      // max_ps returns its second operand when the first is NaN: a NaN becomes -127, as in
      // the scalar twin (fmax).
      const __m256 v = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), scale), lo);
      ints[j] = _mm256_cvtps_epi32(_mm256_min_ps(v, hi));
    }
    const __m256i words01 = _mm256_packs_epi32(ints[0], ints[1]);
    const __m256i words23 = _mm256_packs_epi32(ints[2], ints[3]);
    const __m256i bytes = _mm256_packs_epi16(words01, words23);
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(dst + i),
        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  scalar::StaticQuantizeRow(x + i, k - i, inv_scale, dst + i);
}

void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out) {
  const float inv = InverseRms(x, k, eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
  }
  for (; i < k; ++i) out[i] = x[i] * inv * weight[i];
}

void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  const __m256 vinv = _mm256_set1_ps(InverseRms(x, k, eps));
  for (int64_t b = 0; b < k / kActivationBlock; ++b) {
    const int64_t i = b * kActivationBlock;
    __m256 v[4];
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), vinv),
                           _mm256_loadu_ps(weight + i + 8 * j));
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
        // Lanes (a0 b0 a1 b1 ...): even = a cos - b sin, odd = b cos + a sin.
        const __m128 c4 = _mm_loadu_ps(cos + i);
        const __m128 s4 = _mm_loadu_ps(sin + i);
        const __m256 c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
        const __m256 s = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
        const __m256 v = _mm256_loadu_ps(head + 2 * i);
        const __m256 swapped = _mm256_permute_ps(v, 0xb1);
        _mm256_storeu_ps(head + 2 * i, _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(swapped, s)));
      }
      for (; i < half; ++i) {
        const float a = head[2 * i];
        const float b = head[2 * i + 1];
        head[2 * i] = a * cos[i] - b * sin[i];
        head[2 * i + 1] = a * sin[i] + b * cos[i];
      }
    } else {
      for (; i + 8 <= half; i += 8) {
        const __m256 c = _mm256_loadu_ps(cos + i);
        const __m256 s = _mm256_loadu_ps(sin + i);
        const __m256 a = _mm256_loadu_ps(head + i);
        const __m256 b = _mm256_loadu_ps(head + half + i);
        _mm256_storeu_ps(head + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
        _mm256_storeu_ps(head + half + i, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
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
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 u = _mm256_loadu_ps(up + i);
    const __m256 e = Exp(_mm256_xor_ps(g, sign_mask));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Softmax(float* x, int64_t n) {
  int64_t i = 0;
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float max = HorizontalMax(vmax);
  for (; i < n; ++i) max = std::fmax(max, x[i]);
  const __m256 vm = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = HorizontalSum(vsum);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const __m256 vinv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void Add(const float* a, const float* b, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void F32ToF16Row(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  if (i < n) scalar::F32ToF16Row(x + i, n - i, out + i);
}

void F16ToF32Row(const uint16_t* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  if (i < n) scalar::F16ToF32Row(x + i, n - i, out + i);
}

}  // namespace reprise::kernels::avx2
