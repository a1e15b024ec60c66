// The AVX2 set's peak loops, written in assembly so that the loop is exactly the instructions
// measured (the compiler, left to itself, spilled the accumulators to the stack). Int8:
// vpmaddubsw (32 byte products summed in pairs into int16) accumulated with vpaddw — the Q4_0
// matmul's inner pair, the cheapest exact way AVX2 has to multiply bytes (the Q8_0 path needs
// a sign fix and a widening besides). Float: vfmadd231ps on ymm.
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx2 {
namespace {

int64_t Int8Loop(int64_t rounds) {
  const __m256i a = _mm256_set1_epi8(3);  // unsigned operand
  const __m256i b = _mm256_set1_epi8(1);  // signed operand: each int16 lane gains 6 a round
  __m256i acc0 = _mm256_setzero_si256();
  __m256i acc1 = _mm256_setzero_si256();
  __m256i acc2 = _mm256_setzero_si256();
  __m256i acc3 = _mm256_setzero_si256();
  __m256i acc4 = _mm256_setzero_si256();
  __m256i acc5 = _mm256_setzero_si256();
  __m256i acc6 = _mm256_setzero_si256();
  __m256i acc7 = _mm256_setzero_si256();
  __m256i t0, t1, t2, t3;
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile(
        "vpmaddubsw %[b], %[a], %[t0]\n\t"
        "vpaddw %[t0], %[c0], %[c0]\n\t"
        "vpmaddubsw %[b], %[a], %[t1]\n\t"
        "vpaddw %[t1], %[c1], %[c1]\n\t"
        "vpmaddubsw %[b], %[a], %[t2]\n\t"
        "vpaddw %[t2], %[c2], %[c2]\n\t"
        "vpmaddubsw %[b], %[a], %[t3]\n\t"
        "vpaddw %[t3], %[c3], %[c3]\n\t"
        "vpmaddubsw %[b], %[a], %[t0]\n\t"
        "vpaddw %[t0], %[c4], %[c4]\n\t"
        "vpmaddubsw %[b], %[a], %[t1]\n\t"
        "vpaddw %[t1], %[c5], %[c5]\n\t"
        "vpmaddubsw %[b], %[a], %[t2]\n\t"
        "vpaddw %[t2], %[c6], %[c6]\n\t"
        "vpmaddubsw %[b], %[a], %[t3]\n\t"
        "vpaddw %[t3], %[c7], %[c7]\n\t"
        : [c0] "+x"(acc0), [c1] "+x"(acc1), [c2] "+x"(acc2), [c3] "+x"(acc3), [c4] "+x"(acc4),
          [c5] "+x"(acc5), [c6] "+x"(acc6), [c7] "+x"(acc7), [t0] "=&x"(t0), [t1] "=&x"(t1),
          [t2] "=&x"(t2), [t3] "=&x"(t3)
        : [a] "x"(a), [b] "x"(b));
  }
  const auto sum = _mm256_add_epi16(
      _mm256_add_epi16(
          _mm256_add_epi16(
              _mm256_add_epi16(
                  _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(acc0, acc1), acc2), acc3),
                  acc4),
              acc5),
          acc6),
      acc7);
  return _mm256_extract_epi16(sum, 0);
}

int64_t Float32Loop(int64_t rounds) {
  const __m256 a = _mm256_set1_ps(1.0f);
  const __m256 b = _mm256_set1_ps(1.0f);  // each lane gains 1 a round
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps();
  __m256 acc3 = _mm256_setzero_ps();
  __m256 acc4 = _mm256_setzero_ps();
  __m256 acc5 = _mm256_setzero_ps();
  __m256 acc6 = _mm256_setzero_ps();
  __m256 acc7 = _mm256_setzero_ps();
  __m256 acc8 = _mm256_setzero_ps();
  __m256 acc9 = _mm256_setzero_ps();
  __m256 acc10 = _mm256_setzero_ps();
  __m256 acc11 = _mm256_setzero_ps();
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
        : [c0] "+x"(acc0), [c1] "+x"(acc1), [c2] "+x"(acc2), [c3] "+x"(acc3), [c4] "+x"(acc4),
          [c5] "+x"(acc5), [c6] "+x"(acc6), [c7] "+x"(acc7), [c8] "+x"(acc8), [c9] "+x"(acc9),
          [c10] "+x"(acc10), [c11] "+x"(acc11)
        : [a] "x"(a), [b] "x"(b));
  }
  const auto sum = _mm256_add_ps(
      _mm256_add_ps(
          _mm256_add_ps(
              _mm256_add_ps(
                  _mm256_add_ps(
                      _mm256_add_ps(
                          _mm256_add_ps(
                              _mm256_add_ps(
                                  _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), acc2),
                                                acc3),
                                  acc4),
                              acc5),
                          acc6),
                      acc7),
                  acc8),
              acc9),
          acc10),
      acc11);
  return static_cast<int64_t>(_mm256_cvtss_f32(sum));
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"vpmaddubsw+vpaddw ymm", 8 * 32, Int8Loop}; }
PeakLoop Float32PeakLoop() { return {"vfmadd ymm", 12 * 8, Float32Loop}; }

}  // namespace reprise::kernels::avx2
