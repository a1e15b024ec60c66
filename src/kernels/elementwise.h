// Row-wise kernels of a transformer layer: RMSNorm (optionally fused with int8 quantization
// for the next matmul), RoPE, SwiGLU, softmax, residual add, f32 <-> f16 rows; and the RoPE
// table builder.
//
// Each kernel works on one row (one token's vector) and is written as a scalar reference and
// in AVX2 and NEON, behind the function pointers of kernel_set.h. Inputs and outputs may alias
// exactly (in place) where a comment says so, never partially.
#pragma once

#include <cstdint>

namespace reprise::kernels {

// Which dimensions RoPE rotates together.
enum class RopeStyle : uint8_t {
  kInterleaved,  // pairs (2i, 2i+1): Llama as written by GGUF converters (ggml "norm" mode)
  kNeox,         // pairs (i, i + rot_dim/2): NeoX, Qwen, ggml "neox" mode
};

// out = x / sqrt(mean(x^2) + eps) * weight, over k values. In place allowed (out == x).
using RmsNormFn = void (*)(const float* x, const float* weight, int64_t k, float eps, float* out);
// The same normalisation, written straight into a quantized activation row
// (activation_quant.h). Requires: k % 32 == 0.
using RmsNormQuantizeFn = void (*)(const float* x, const float* weight, int64_t k, float eps,
                                   uint8_t* dst);
// dst = the quantized activation row of x[0..k). Requires: k % 32 == 0.
using QuantizeRowFn = void (*)(const float* x, int64_t k, uint8_t* dst);
// Static (per-tensor) quantization, as an NPU's fixed-point input: dst[i] = x[i] * inv_scale
// clamped to [-127, 127] and rounded to nearest even (a NaN becomes -127). The row is the K
// int8 values a kI8x8 matmul reads. Any k.
using StaticQuantizeRowFn = void (*)(const float* x, int64_t k, float inv_scale, int8_t* dst);

// Rotates, for each of num_heads heads at x + h * head_stride, its first rot_dim values by
// the angles whose cos/sin are given (rot_dim / 2 of each, from RopeCosSin), in place.
// Requires: rot_dim even.
using RopeFn = void (*)(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim,
                        const float* cos, const float* sin, RopeStyle style);

// out[i] = silu(gate[i]) * up[i] with silu(g) = g / (1 + exp(-g)). out may alias gate or up.
using SiluMulFn = void (*)(const float* gate, const float* up, int64_t n, float* out);
// x = softmax(x), in place; subtracts the max first. Requires: n >= 1.
using SoftmaxFn = void (*)(float* x, int64_t n);
// out[i] = a[i] + b[i]. out may alias a or b.
using AddFn = void (*)(const float* a, const float* b, int64_t n, float* out);
// IEEE half <-> float rows, round to nearest even.
using F32ToF16Fn = void (*)(const float* x, int64_t n, uint16_t* out);
using F16ToF32Fn = void (*)(const uint16_t* x, int64_t n, float* out);

// Inverse frequencies of RoPE: inv_freq[i] = freq_scale * theta^(-2i / rot_dim) /
// factors[i] for i < rot_dim / 2. `factors` (Llama 3 style per-pair scaling, from the GGUF
// rope_freqs tensor) may be null for all ones; freq_scale is 1 / (linear scaling factor).
// Computed in double. Requires: rot_dim even, > 0.
void RopeInverseFrequencies(float theta, int64_t rot_dim, const float* factors, float freq_scale,
                            float* inv_freq);

// cos[i], sin[i] of position * inv_freq[i], for i < num_pairs, computed in double so that
// long positions keep their precision. Tables for many positions are rows of these.
void RopeCosSin(int32_t position, const float* inv_freq, int64_t num_pairs, float* cos, float* sin);

}  // namespace reprise::kernels
