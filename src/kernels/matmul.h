// Matrix multiply of activations by a packed weight matrix: out[M x N] = X[M x K] * W^T.
//
// W is a PackedMatrix (packed_matrix.h). X comes in the form the format reads: int8
// quantized rows (activation_quant.h) for the block formats, float rows for F16x8 / F32x8.
// The kernel computes the block out[m_begin..m_end) x [n_begin..n_end); callers split N
// (and, for long prompts, M) across threads with ThreadPool::ParallelFor. Ranges may start
// and end anywhere; ranges aligned to kPackRows (8) are the fast ones, since each group of 8
// weight rows feeds one vector of outputs.
//
// Quantized formats compute, per 32-value block, the exact int32 dot product of the weight
// and activation integers, scale it by d_weight * d_activation in float and sum the blocks
// in float, so the only error beyond the float rounding of that sum is the activations'
// int8 quantization. Float formats accumulate x * w in float with FMA. kI8x8 (the NPU-style
// path) accumulates the whole row's products in int32 and rescales once per output.
//
// The kernels are in kernel_set.h: KernelSet::matmul, scalar and AVX2.
#pragma once

#include <cstdint>

#include "kernels/packed_matrix.h"

namespace reprise::kernels {

// Left operand: M rows, of which the kernel reads rows [m_begin, m_end).
struct MatMulInput {
  const float* f32 = nullptr;   // row m at f32 + m * f32_stride; for kF16x8 / kF32x8
  int64_t f32_stride = 0;       // floats
  const uint8_t* q8 = nullptr;  // row m at q8 + m * q8_stride; for the block formats, and
  int64_t q8_stride = 0;        // bytes, >= QuantizedRowBytes(K) (kI8x8: >= K)
  // kI8x8: the rows at q8 are K int8 values q with x ~= static_scale * q (one per-tensor
  // scale, StaticQuantizeRowFn); out = static_scale * d_row * (int32 sum of q * w).
  float static_scale = 0.0f;
};

// out[m][n] at data + m * stride + n. With `accumulate`, the kernel adds to what is there
// (a residual connection folded into the projection) instead of overwriting it.
struct MatMulOutput {
  float* data = nullptr;
  int64_t stride = 0;  // floats
  bool accumulate = false;
};

// Requires: the input member that w.format reads is set; 0 <= m_begin <= m_end;
// 0 <= n_begin <= n_end <= w.rows; the output block does not overlap the input.
using MatMulFn = void (*)(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out,
                          int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end);

}  // namespace reprise::kernels
