// The vectors of the x86 attention (attention_tiles.h): Ymm (AVX2 + FMA + F16C,
// attention_avx2.cc) and Zmm (AVX-512 F/BW/DQ/VL, attention_avx512.cc). Each of those
// translation units includes this header once with its own flags and instantiates
// AttentionImpl with its width; everything here is in an anonymous namespace.
#pragma once

#include <cstdint>

#include "kernels/attention_tiles.h"
#include "kernels/avx2_math.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels {
namespace {

// 8x8 transpose of floats held in eight registers.
REPRISE_ALWAYS_INLINE void Transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
  const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
  const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
  const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

REPRISE_ALWAYS_INLINE __m256 LoadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// What Ymm and Zmm share: the tile loads (8x8 transposes of ymm registers) and the prefetch.
struct X86Tiles {
  // kt[d * tile + j] = K[slot j][d] for j < count; zero for count <= j < tile.
  static void LoadKTransposed(const uint16_t* k, int64_t hd, int64_t tile, int64_t count,
                              float* kt) {
    for (int64_t j0 = 0; j0 < tile; j0 += 8) {
      if (j0 >= count) {
        for (int64_t d = 0; d < hd; ++d) _mm256_store_ps(kt + d * tile + j0, _mm256_setzero_ps());
        continue;
      }
      for (int64_t d0 = 0; d0 < hd; d0 += 8) {
        __m256 r[8];
        for (int64_t j = 0; j < 8; ++j) {
          r[j] = j0 + j < count ? LoadHalf8(k + (j0 + j) * hd + d0) : _mm256_setzero_ps();
        }
        Transpose8(r);
        for (int64_t d = 0; d < 8; ++d) _mm256_store_ps(kt + (d0 + d) * tile + j0, r[d]);
      }
    }
  }

  // vt[j * stride + d] = V[slot j][d] for j < count, d < hd (stride >= hd: the padding
  // columns are left as they are).
  static void LoadV(const uint16_t* v, int64_t hd, int64_t stride, int64_t count, float* vt) {
    for (int64_t j = 0; j < count; ++j) {
      for (int64_t d = 0; d < hd; d += 8) {
        _mm256_store_ps(vt + j * stride + d, LoadHalf8(v + j * hd + d));
      }
    }
  }
  static REPRISE_ALWAYS_INLINE void Prefetch(const char* p) { _mm_prefetch(p, _MM_HINT_T0); }
};

// 256-bit vectors (AVX2 + FMA). 16 registers: rows are computed 3 at a time (12
// accumulators of 4 vectors each, for scores and for V).
struct Ymm : X86Tiles {
  using F = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kScoreRows = 3;
  static constexpr int kValueRows = 3;
  static REPRISE_ALWAYS_INLINE F Zero() { return _mm256_setzero_ps(); }
  static REPRISE_ALWAYS_INLINE F Set1(float x) { return _mm256_set1_ps(x); }
  static REPRISE_ALWAYS_INLINE F Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static REPRISE_ALWAYS_INLINE F Load(const float* p) { return _mm256_load_ps(p); }
  static REPRISE_ALWAYS_INLINE F LoadHalf(const uint16_t* p) { return LoadHalf8(p); }
  static REPRISE_ALWAYS_INLINE void Store(float* p, F x) { _mm256_store_ps(p, x); }
  static REPRISE_ALWAYS_INLINE F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static REPRISE_ALWAYS_INLINE F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Max(F a, F b) { return _mm256_max_ps(a, b); }
  static REPRISE_ALWAYS_INLINE float ReduceMax(F x) { return avx2::HorizontalMax(x); }
  static REPRISE_ALWAYS_INLINE float ReduceAdd(F x) { return avx2::HorizontalSum(x); }
  static REPRISE_ALWAYS_INLINE F Exp(F x) { return avx2::Exp(x); }
  // -inf where the slot is hidden from a query at `position`: visible iff
  // 0 <= slot position <= position.
  static REPRISE_ALWAYS_INLINE F Mask(F score, const int32_t* slot_positions, int32_t position) {
    const __m256i pos = _mm256_load_si256(reinterpret_cast<const __m256i*>(slot_positions));
    const __m256i hidden = _mm256_or_si256(_mm256_cmpgt_epi32(pos, _mm256_set1_epi32(position)),
                                           _mm256_cmpgt_epi32(_mm256_setzero_si256(), pos));
    return _mm256_blendv_ps(score, _mm256_set1_ps(-INFINITY), _mm256_castsi256_ps(hidden));
  }
};

#if defined(__AVX512F__)
// 512-bit vectors (AVX-512 F/BW/DQ/VL). 32 registers: rows are computed 6 at a time (24
// accumulators).
struct Zmm : X86Tiles {
  using F = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kScoreRows = 6;
  static constexpr int kValueRows = 6;
  static REPRISE_ALWAYS_INLINE F Zero() { return _mm512_setzero_ps(); }
  static REPRISE_ALWAYS_INLINE F Set1(float x) { return _mm512_set1_ps(x); }
  static REPRISE_ALWAYS_INLINE F Broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static REPRISE_ALWAYS_INLINE F Load(const float* p) { return _mm512_load_ps(p); }
  static REPRISE_ALWAYS_INLINE F LoadHalf(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static REPRISE_ALWAYS_INLINE void Store(float* p, F x) { _mm512_store_ps(p, x); }
  static REPRISE_ALWAYS_INLINE F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static REPRISE_ALWAYS_INLINE F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Add(F a, F b) { return _mm512_add_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static REPRISE_ALWAYS_INLINE F Max(F a, F b) { return _mm512_max_ps(a, b); }
  static REPRISE_ALWAYS_INLINE float ReduceMax(F x) {
    const __m256 m = _mm256_max_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    return avx2::HorizontalMax(m);
  }
  static REPRISE_ALWAYS_INLINE float ReduceAdd(F x) {
    const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    return avx2::HorizontalSum(s);
  }
  static REPRISE_ALWAYS_INLINE F Exp(F x) { return avx2::Exp512(x); }
  static REPRISE_ALWAYS_INLINE F Mask(F score, const int32_t* slot_positions, int32_t position) {
    const __m512i pos = _mm512_load_si512(slot_positions);
    const __mmask16 visible = _mm512_cmple_epi32_mask(pos, _mm512_set1_epi32(position)) &
                              _mm512_cmpge_epi32_mask(pos, _mm512_setzero_si512());
    return _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), visible, score);
  }
};
#endif

}  // namespace
}  // namespace reprise::kernels
