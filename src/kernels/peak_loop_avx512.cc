// The AVX-512 VNNI set's peak loops, in assembly so that the loop is exactly the instructions
// measured: vpdpbusd on zmm (int8) and vfmadd231ps on zmm (float: the machine's float peak;
// the set's float matmuls run on ymm, so they reach at most half of it).
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx512_vnni {
namespace {

int64_t Int8Loop(int64_t rounds) {
  const __m512i a = _mm512_set1_epi8(3);   // unsigned operand
  const __m512i b = _mm512_set1_epi8(-1);  // signed operand: each int32 lane gains -12 a round
  __m512i acc0 = _mm512_setzero_si512();
  __m512i acc1 = _mm512_setzero_si512();
  __m512i acc2 = _mm512_setzero_si512();
  __m512i acc3 = _mm512_setzero_si512();
  __m512i acc4 = _mm512_setzero_si512();
  __m512i acc5 = _mm512_setzero_si512();
  __m512i acc6 = _mm512_setzero_si512();
  __m512i acc7 = _mm512_setzero_si512();
  __m512i acc8 = _mm512_setzero_si512();
  __m512i acc9 = _mm512_setzero_si512();
  __m512i acc10 = _mm512_setzero_si512();
  __m512i acc11 = _mm512_setzero_si512();
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile(
        "vpdpbusd %[b], %[a], %[c0]\n\t"
        "vpdpbusd %[b], %[a], %[c1]\n\t"
        "vpdpbusd %[b], %[a], %[c2]\n\t"
        "vpdpbusd %[b], %[a], %[c3]\n\t"
        "vpdpbusd %[b], %[a], %[c4]\n\t"
        "vpdpbusd %[b], %[a], %[c5]\n\t"
        "vpdpbusd %[b], %[a], %[c6]\n\t"
        "vpdpbusd %[b], %[a], %[c7]\n\t"
        "vpdpbusd %[b], %[a], %[c8]\n\t"
        "vpdpbusd %[b], %[a], %[c9]\n\t"
        "vpdpbusd %[b], %[a], %[c10]\n\t"
        "vpdpbusd %[b], %[a], %[c11]\n\t"
        : [c0] "+v"(acc0), [c1] "+v"(acc1), [c2] "+v"(acc2), [c3] "+v"(acc3), [c4] "+v"(acc4),
          [c5] "+v"(acc5), [c6] "+v"(acc6), [c7] "+v"(acc7), [c8] "+v"(acc8), [c9] "+v"(acc9),
          [c10] "+v"(acc10), [c11] "+v"(acc11)
        : [a] "v"(a), [b] "v"(b));
  }
  const auto sum = _mm512_add_epi32(
      _mm512_add_epi32(
          _mm512_add_epi32(
              _mm512_add_epi32(
                  _mm512_add_epi32(
                      _mm512_add_epi32(
                          _mm512_add_epi32(
                              _mm512_add_epi32(
                                  _mm512_add_epi32(
                                      _mm512_add_epi32(_mm512_add_epi32(acc0, acc1), acc2), acc3),
                                  acc4),
                              acc5),
                          acc6),
                      acc7),
                  acc8),
              acc9),
          acc10),
      acc11);
  return _mm512_cvtsi512_si32(sum);
}

int64_t Float32Loop(int64_t rounds) {
  const __m512 a = _mm512_set1_ps(1.0f);
  const __m512 b = _mm512_set1_ps(1.0f);  // each lane gains 1 a round
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps();
  __m512 acc3 = _mm512_setzero_ps();
  __m512 acc4 = _mm512_setzero_ps();
  __m512 acc5 = _mm512_setzero_ps();
  __m512 acc6 = _mm512_setzero_ps();
  __m512 acc7 = _mm512_setzero_ps();
  __m512 acc8 = _mm512_setzero_ps();
  __m512 acc9 = _mm512_setzero_ps();
  __m512 acc10 = _mm512_setzero_ps();
  __m512 acc11 = _mm512_setzero_ps();
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile(
        "vfmadd231ps %[b], %[a], %[c0]\n\t"
        "vfmadd231ps %[b], %[a], %[c1]\n\t"
        "vfmadd231ps %[b], %[a], %[c2]\n\t"
        "vfmadd231ps %[b], %[a], %[c3]\n\t"
        "vfmadd231ps %[b], %[a], %[c4]\n\t"
        "vfmadd231ps %[b], %[a], %[c5]\n\t"
        "vfmadd231ps %[b], %[a], %[c6]\n\t"
        "vfmadd231ps %[b], %[a], %[c7]\n\t"
        "vfmadd231ps %[b], %[a], %[c8]\n\t"
        "vfmadd231ps %[b], %[a], %[c9]\n\t"
        "vfmadd231ps %[b], %[a], %[c10]\n\t"
        "vfmadd231ps %[b], %[a], %[c11]\n\t"
        : [c0] "+v"(acc0), [c1] "+v"(acc1), [c2] "+v"(acc2), [c3] "+v"(acc3), [c4] "+v"(acc4),
          [c5] "+v"(acc5), [c6] "+v"(acc6), [c7] "+v"(acc7), [c8] "+v"(acc8), [c9] "+v"(acc9),
          [c10] "+v"(acc10), [c11] "+v"(acc11)
        : [a] "v"(a), [b] "v"(b));
  }
  const auto sum = _mm512_add_ps(
      _mm512_add_ps(
          _mm512_add_ps(
              _mm512_add_ps(
                  _mm512_add_ps(
                      _mm512_add_ps(
                          _mm512_add_ps(
                              _mm512_add_ps(
                                  _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), acc2),
                                                acc3),
                                  acc4),
                              acc5),
                          acc6),
                      acc7),
                  acc8),
              acc9),
          acc10),
      acc11);
  return static_cast<int64_t>(_mm512_cvtss_f32(sum));
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"vpdpbusd zmm", 12 * 64, Int8Loop}; }
PeakLoop Float32PeakLoop() { return {"vfmadd zmm", 12 * 16, Float32Loop}; }

}  // namespace reprise::kernels::avx512_vnni
