// Quantization to Q3_K, Q4_K, Q5_K and Q6_K (element order: see quantize_k_dequant.cc).
//
// Each sub-block first gets a float scale (and min) from a small search: a grid of about
// twenty candidate inverse scales around the one that spans the sub-block's range, each
// followed by a least-squares refit of scale (and min) to the integers it rounds to; the
// candidate with the least squared error wins. The super-block then stores its scales
// relative to the largest one (6-bit for Q4_K/Q5_K, int8 for Q6_K), and the integers are
// chosen again against the scales exactly as they will be read back. This is simpler than
// llama.cpp's importance-weighted search but writes blocks llama.cpp reads the same way.

#include <cmath>
#include <cstring>
#include <initializer_list>

#include "base/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_internal.h"

namespace reprise::kernels::internal {
namespace {

// Below this, a super-block's largest sub-block scale counts as zero (its inverse would
// overflow).
constexpr float kTinyScale = 1e-30f;
constexpr int kSearchSteps = 10;      // candidates on each side of the range-spanning one
constexpr float kSearchDelta = 0.1f;  // in units of the integer range

// Fits x[0..n) ~ scale * L + min with L in [0, nmax], scale >= 0 and min <= 0.
// Returns scale and sets *neg_min = -min.
float FitScaleMin(const float* x, int n, int nmax, float* neg_min) {
  float lo = 0.0f;
  float hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  *neg_min = -lo;
  if (!(hi > lo)) return 0.0f;
  float best_scale = (hi - lo) / static_cast<float>(nmax);
  float best_min = lo;
  float best_error = INFINITY;
  for (int s = -kSearchSteps; s <= kSearchSteps; ++s) {
    const float iscale =
        (static_cast<float>(nmax) + kSearchDelta * static_cast<float>(s)) / (hi - lo);
    int L[kQK];
    float sum_l = 0, sum_l2 = 0, sum_x = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      L[i] = NearestInt(iscale * (x[i] - lo), 0, nmax);
      const auto l = static_cast<float>(L[i]);
      sum_l += l;
      sum_l2 += l * l;
      sum_x += x[i];
      sum_xl += x[i] * l;
    }
    const float det = static_cast<float>(n) * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float scale = (static_cast<float>(n) * sum_xl - sum_x * sum_l) / det;
    float min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (min > 0.0f) {  // the layout subtracts a non-negative min
      min = 0.0f;
      scale = sum_xl / sum_l2;
    }
    if (!(scale > 0.0f)) continue;
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(L[i]) + min - x[i];
      error += diff * diff;
    }
    if (error < best_error) {
      best_error = error;
      best_scale = scale;
      best_min = min;
    }
  }
  *neg_min = -best_min;
  return best_scale;
}

// Fits x[0..16) ~ scale * L with L in [lo, hi] (Q6_K: [-32, 31], Q3_K: [-4, 3]); the scale may
// be negative (the layouts' scales are signed), which lets the largest magnitude use the `lo`
// end.
float FitScaleSymmetric(const float* x, int lo, int hi) {
  constexpr int n = 16;
  float amax = 0.0f;
  float max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best_scale = max / static_cast<float>(lo);
  float best_error = INFINITY;
  // Candidates map `max` near `lo` (negative scale) or near `hi` (positive scale).
  for (const int end : {lo, hi}) {
    for (int s = -kSearchSteps; s <= kSearchSteps; ++s) {
      const float iscale = (static_cast<float>(end) + kSearchDelta * static_cast<float>(s)) / max;
      int L[n];
      float sum_l2 = 0, sum_xl = 0;
      for (int i = 0; i < n; ++i) {
        L[i] = NearestInt(iscale * x[i], lo, hi);
        sum_l2 += static_cast<float>(L[i] * L[i]);
        sum_xl += x[i] * static_cast<float>(L[i]);
      }
      if (!(sum_l2 > 0.0f)) continue;
      const float scale = sum_xl / sum_l2;
      float error = 0.0f;
      for (int i = 0; i < n; ++i) {
        const float diff = scale * static_cast<float>(L[i]) - x[i];
        error += diff * diff;
      }
      if (error < best_error) {
        best_error = error;
        best_scale = scale;
      }
    }
  }
  return best_scale;
}

// The 16 sub-block scales of a Q3_K or Q6_K super-block: each fitted over L in [lo, hi], then
// stored relative to one d as integers in [scale_lo, -scale_lo - 1], the largest magnitude as
// scale_lo (the end with the most room). Returns d as a half float; 0, with every scale 0, for
// a block whose scales are all tiny.
uint16_t QuantizeSubBlockScales(const float* x, int lo, int hi, int scale_lo, int* scales) {
  float fitted[16];
  float max_scale = 0.0f;  // the signed scale of largest magnitude
  for (int j = 0; j < 16; ++j) {
    fitted[j] = FitScaleSymmetric(x + 16 * j, lo, hi);
    if (std::fabs(fitted[j]) > std::fabs(max_scale)) max_scale = fitted[j];
  }
  if (!(std::fabs(max_scale) > kTinyScale)) {
    for (int j = 0; j < 16; ++j) scales[j] = 0;
    return F32ToF16(0.0f);
  }
  const float iscale = static_cast<float>(scale_lo) / max_scale;
  for (int j = 0; j < 16; ++j) scales[j] = NearestInt(iscale * fitted[j], scale_lo, -scale_lo - 1);
  return F32ToF16(1.0f / iscale);
}

// Q4_K and Q5_K share everything but the width of L: 8 sub-blocks of 32, each with a 6-bit
// scale and min relative to the super-block's d and dmin. Fills the header fields and L.
template <typename Block>
void QuantizeScaleMinSuperBlock(const float* x, int nmax, Block* b, uint8_t* L) {
  float scales[8], mins[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    scales[j] = FitScaleMin(x + 32 * j, 32, nmax, &mins[j]);
    max_scale = std::fmax(max_scale, scales[j]);
    max_min = std::fmax(max_min, mins[j]);
  }
  const float inv_scale = max_scale > kTinyScale ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > kTinyScale ? 63.0f / max_min : 0.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(NearestInt(inv_scale * scales[j], 0, 63));
    lm[j] = static_cast<uint8_t>(NearestInt(inv_min * mins[j], 0, 63));
  }
  PackScaleMinK4(ls, lm, b->scales);
  b->d = F32ToF16(inv_scale != 0.0f ? max_scale / 63.0f : 0.0f);
  b->dmin = F32ToF16(inv_min != 0.0f ? max_min / 63.0f : 0.0f);
  const float d = F16ToF32(b->d);
  const float dmin = F16ToF32(b->dmin);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(ls[j]);
    const float ml = dmin * static_cast<float>(lm[j]);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          dl != 0.0f ? static_cast<uint8_t>(NearestInt((x[32 * j + l] + ml) / dl, 0, nmax)) : 0;
    }
  }
}

template <typename Block>
void Store(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

}  // namespace

void QuantizeQ4_K(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK_K) {
    BlockQ4_K b;
    uint8_t L[kQK_K];
    QuantizeScaleMinSuperBlock(src, 15, &b, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
      }
    }
    Store(b, dst, i);
  }
}

void QuantizeQ5_K(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK_K) {
    BlockQ5_K b;
    uint8_t L[kQK_K];
    QuantizeScaleMinSuperBlock(src, 31, &b, L);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l];
        const int hi = L[64 * c + 32 + l];
        b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xf) | ((hi & 0xf) << 4));
        b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
    Store(b, dst, i);
  }
}

// Q3_K: 16 sub-blocks of 16, L in [-4, 3] stored as L + 4 (low 2 bits in qs, the third in
// hmask), each sub-block's scale relative to d as a 6-bit sc - 32 in [-32, 31].
void QuantizeQ3_K(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK_K) {
    BlockQ3_K b;
    int sc[16];
    b.d = QuantizeSubBlockScales(src, -4, 3, -32, sc);
    PackScalesQ3_K(sc, b.scales);
    const float d = F16ToF32(b.d);
    std::memset(b.qs, 0, sizeof(b.qs));
    std::memset(b.hmask, 0, sizeof(b.hmask));
    for (int e = 0; e < kQK_K; ++e) {
      const float dl = d * static_cast<float>(sc[e / 16]);
      const int stored = (dl != 0.0f ? NearestInt(src[e] / dl, -4, 3) : 0) + 4;
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      b.qs[32 * h + l] |= static_cast<uint8_t>((stored & 3) << (2 * k));
      b.hmask[l] |= static_cast<uint8_t>((stored >> 2) << (4 * h + k));
    }
    Store(b, dst, i);
  }
}

void QuantizeQ6_K(const float* src, uint8_t* dst, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, src += kQK_K) {
    BlockQ6_K b;
    int sc[16];
    b.d = QuantizeSubBlockScales(src, -32, 31, -128, sc);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(sc[j]);
    uint8_t L[kQK_K];
    const float d = F16ToF32(b.d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scales[j]);
      for (int l = 0; l < 16; ++l) {
        const int q = dl != 0.0f ? NearestInt(src[16 * j + l] / dl, -32, 31) : 0;
        L[16 * j + l] = static_cast<uint8_t>(q + 32);
      }
    }
    std::memset(b.ql, 0, sizeof(b.ql));
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      b.ql[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>((L[e] & 0xf) << (4 * (k / 2)));
      b.qh[32 * h + l] |= static_cast<uint8_t>((L[e] >> 4) << (2 * k));
    }
    Store(b, dst, i);
  }
}

}  // namespace reprise::kernels::internal
