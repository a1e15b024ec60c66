// The kernels behind KernelSet's tables (kernel_set.cc fills them from these).
//
// Internal to kernels/. namespace scalar: the portable references, compiled without SIMD
// flags. namespace avx2: compiled with -mavx2 -mfma -mf16c; calling one on a CPU without
// those is undefined, so only Avx2Kernels() hands them out. Contracts are those of the
// function pointer types in matmul.h, elementwise.h and attention.h.
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/peak_loop.h"

namespace reprise::kernels {

namespace scalar {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
void QuantizeRow(const float* x, int64_t k, uint8_t* dst);
void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst);
void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out);
void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst);
void Rope(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim, const float* cos,
          const float* sin, RopeStyle style);
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void Softmax(float* x, int64_t n);
void Add(const float* a, const float* b, int64_t n, float* out);
void F32ToF16Row(const float* x, int64_t n, uint16_t* out);
void F16ToF32Row(const uint16_t* x, int64_t n, float* out);
void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end);
PeakLoop Int8PeakLoop();
PeakLoop Float32PeakLoop();
}  // namespace scalar

namespace avx2 {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
void QuantizeRow(const float* x, int64_t k, uint8_t* dst);
void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst);
void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out);
void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst);
void Rope(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim, const float* cos,
          const float* sin, RopeStyle style);
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void Softmax(float* x, int64_t n);
void Add(const float* a, const float* b, int64_t n, float* out);
void F32ToF16Row(const float* x, int64_t n, uint16_t* out);
void F16ToF32Row(const uint16_t* x, int64_t n, float* out);
void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end);
PeakLoop Int8PeakLoop();
PeakLoop Float32PeakLoop();
}  // namespace avx2

// Compiled with the AVX2 flags and -mavxvnni; only AvxVnniKernels() hands it out.
namespace avx_vnni {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
PeakLoop Int8PeakLoop();
}  // namespace avx_vnni

// Compiled with the AVX2 flags and -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni;
// only Avx512VnniKernels() hands it out. The other kernels of that set are the AVX2 ones.
namespace avx512_vnni {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
PeakLoop Int8PeakLoop();
PeakLoop Float32PeakLoop();
}  // namespace avx512_vnni

// Compiled with the same flags as avx512_vnni (AVX-512 F is what it needs); only
// Avx512VnniKernels() hands it out.
namespace avx512 {
void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end);
}  // namespace avx512

// AArch64, compiled with -march=armv8.2-a+dotprod; only NeonDotKernels() and NeonI8mmKernels()
// hand them out.
namespace neon {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
void QuantizeRow(const float* x, int64_t k, uint8_t* dst);
void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst);
void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out);
void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst);
void Rope(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim, const float* cos,
          const float* sin, RopeStyle style);
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void Softmax(float* x, int64_t n);
void Add(const float* a, const float* b, int64_t n, float* out);
void F32ToF16Row(const float* x, int64_t n, uint16_t* out);
void F16ToF32Row(const uint16_t* x, int64_t n, float* out);
void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end);
PeakLoop Int8PeakLoop();
PeakLoop Float32PeakLoop();
}  // namespace neon

// AArch64, compiled with -march=armv8.2-a+dotprod+i8mm; only NeonI8mmKernels() hands it out.
// The other kernels of that set are the neon ones (and so is its matmul for one-row calls and
// for the float and kI8x8 formats).
namespace neon_i8mm {
void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end);
PeakLoop Int8PeakLoop();
}  // namespace neon_i8mm

}  // namespace reprise::kernels
