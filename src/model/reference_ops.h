// The math steps of the reference forward pass, one plain function each.
//
// These are the oracle's building blocks (ReferenceModel uses them; tests check them against
// the formulas): float storage, double accumulation, no SIMD, no threads, no allocation
// except where a result is returned. Correctness should be obvious from reading them; speed
// is not a goal. Faster kernels in kernels/ and graph/ are tested against these results.
#pragma once

#include <cstdint>
#include <span>

#include "model/model_config.h"

namespace reprise::model {

// out[i] = x[i] * weight[i] / sqrt(mean(x^2) + eps). `out` may alias `x`.
// Requires: x, weight and out have the same size, which is not zero.
void RmsNorm(std::span<const float> x, std::span<const float> weight, float eps,
             std::span<float> out);

// out[r] = sum_c matrix[r * x.size() + c] * x[c], for r in [0, out.size()): `matrix` is
// row-major [out.size(), x.size()], i.e. GGUF's [out][in] rows (dims[0] = in).
// Requires: matrix.size() == out.size() * x.size(); out does not overlap x.
void MatVec(std::span<const float> matrix, std::span<const float> x, std::span<float> out);

// x[i] += y[i]. Requires: same sizes.
void AddInPlace(std::span<float> x, std::span<const float> y);

// silu(v) = v / (1 + exp(-v)).
float Silu(float v);

// x = exp(x - max) / sum(exp(x - max)), in place. Requires: x is not empty.
void SoftmaxInPlace(std::span<float> x);

// Sum of a[i] * b[i], accumulated in double. Requires: same sizes.
double Dot(std::span<const float> a, std::span<const float> b);

// The RoPE rotation angle, in radians, of pair `pair` (0 <= pair < rope_dims / 2) at
// `position`: position * theta^(-2 pair / rope_dims) / rope_freq_factors[pair] (the divisor
// only when the config has factors, i.e. Llama 3 scaling divides the frequency).
double RopeAngle(const ModelConfig& config, int64_t position, int pair);

// The two indices within a head that RoPE pair `pair` rotates together: (2 pair, 2 pair + 1)
// for RopeStyle::kInterleaved, (pair, pair + rope_dims / 2) for RopeStyle::kNeox.
struct RopePair {
  int first;
  int second;
};
RopePair RopePairIndices(const ModelConfig& config, int pair);

// Rotates one head vector (size config.head_dim) in place for `position`: for every pair
// (a, b) = RopePairIndices(config, i), i < rope_dims / 2, and angle t = RopeAngle(...):
//   (x[a], x[b]) <- (x[a] cos t - x[b] sin t, x[a] sin t + x[b] cos t).
// Dimensions past rope_dims are left unchanged.
void ApplyRope(const ModelConfig& config, int64_t position, std::span<float> head);

// The index of the largest value; the lowest such index on ties. Requires: not empty.
int Argmax(std::span<const float> values);

}  // namespace reprise::model
