// The AVX-VNNI set's int8 peak loop: vpdpbusd on ymm (4 byte products per int32 lane added
// into it), in assembly so that the loop is exactly the instructions measured. Its float loop
// is the AVX2 one.
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx_vnni {
namespace {

int64_t Int8Loop(int64_t rounds) {
  const __m256i a = _mm256_set1_epi8(3);   // unsigned operand
  const __m256i b = _mm256_set1_epi8(-1);  // signed operand: each int32 lane gains -12 a round
  __m256i acc0 = _mm256_setzero_si256();
  __m256i acc1 = _mm256_setzero_si256();
  __m256i acc2 = _mm256_setzero_si256();
  __m256i acc3 = _mm256_setzero_si256();
  __m256i acc4 = _mm256_setzero_si256();
  __m256i acc5 = _mm256_setzero_si256();
  __m256i acc6 = _mm256_setzero_si256();
  __m256i acc7 = _mm256_setzero_si256();
  __m256i acc8 = _mm256_setzero_si256();
  __m256i acc9 = _mm256_setzero_si256();
  __m256i acc10 = _mm256_setzero_si256();
  __m256i acc11 = _mm256_setzero_si256();
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile(
        "%{vex%} vpdpbusd %[b], %[a], %[c0]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c1]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c2]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c3]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c4]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c5]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c6]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c7]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c8]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c9]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c10]\n\t"
        "%{vex%} vpdpbusd %[b], %[a], %[c11]\n\t"
        : [c0] "+x"(acc0), [c1] "+x"(acc1), [c2] "+x"(acc2), [c3] "+x"(acc3), [c4] "+x"(acc4),
          [c5] "+x"(acc5), [c6] "+x"(acc6), [c7] "+x"(acc7), [c8] "+x"(acc8), [c9] "+x"(acc9),
          [c10] "+x"(acc10), [c11] "+x"(acc11)
        : [a] "x"(a), [b] "x"(b));
  }
  const auto sum = _mm256_add_epi32(
      _mm256_add_epi32(
          _mm256_add_epi32(
              _mm256_add_epi32(
                  _mm256_add_epi32(
                      _mm256_add_epi32(
                          _mm256_add_epi32(
                              _mm256_add_epi32(
                                  _mm256_add_epi32(
                                      _mm256_add_epi32(_mm256_add_epi32(acc0, acc1), acc2), acc3),
                                  acc4),
                              acc5),
                          acc6),
                      acc7),
                  acc8),
              acc9),
          acc10),
      acc11);
  return _mm256_extract_epi32(sum, 0);
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"vpdpbusd ymm", 12 * 32, Int8Loop}; }

}  // namespace reprise::kernels::avx_vnni
