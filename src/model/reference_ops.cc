#include "model/reference_ops.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace reprise::model {

void RmsNorm(std::span<const float> x, std::span<const float> weight, float eps,
             std::span<float> out) {
  REPRISE_CHECK(!x.empty() && x.size() == weight.size() && x.size() == out.size());
  double sum_squares = 0.0;
  for (float v : x) sum_squares += static_cast<double>(v) * v;
  const double mean_square = sum_squares / static_cast<double>(x.size());
  const double inv_rms = 1.0 / std::sqrt(mean_square + static_cast<double>(eps));
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(x[i]) * inv_rms * weight[i]);
  }
}

double Dot(std::span<const float> a, std::span<const float> b) {
  REPRISE_CHECK_EQ(a.size(), b.size());
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

void MatVec(std::span<const float> matrix, std::span<const float> x, std::span<float> out) {
  REPRISE_CHECK_EQ(matrix.size(), out.size() * x.size());
  const size_t num_cols = x.size();
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] = static_cast<float>(Dot(matrix.subspan(r * num_cols, num_cols), x));
  }
}

void AddInPlace(std::span<float> x, std::span<const float> y) {
  REPRISE_CHECK_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

float Silu(float v) {
  return static_cast<float>(static_cast<double>(v) / (1.0 + std::exp(-static_cast<double>(v))));
}

void SoftmaxInPlace(std::span<float> x) {
  REPRISE_CHECK(!x.empty());
  float max_value = x[0];
  for (float v : x) max_value = std::max(max_value, v);
  double sum = 0.0;
  for (float& v : x) {
    v = static_cast<float>(std::exp(static_cast<double>(v) - max_value));
    sum += v;
  }
  for (float& v : x) v = static_cast<float>(v / sum);
}

double RopeAngle(const ModelConfig& config, int64_t position, int pair) {
  REPRISE_CHECK(pair >= 0 && 2 * pair < config.rope_dims);
  double inv_frequency = std::pow(static_cast<double>(config.rope_theta),
                                  -2.0 * pair / static_cast<double>(config.rope_dims));
  if (!config.rope_freq_factors.empty()) {
    inv_frequency /= config.rope_freq_factors[static_cast<size_t>(pair)];
  }
  return static_cast<double>(position) * inv_frequency;
}

RopePair RopePairIndices(const ModelConfig& config, int pair) {
  if (config.rope_style == RopeStyle::kInterleaved) return {2 * pair, 2 * pair + 1};
  return {pair, pair + config.rope_dims / 2};
}

void ApplyRope(const ModelConfig& config, int64_t position, std::span<float> head) {
  REPRISE_CHECK_EQ(head.size(), static_cast<size_t>(config.head_dim));
  REPRISE_CHECK(config.rope_dims <= config.head_dim);
  for (int i = 0; i < config.rope_dims / 2; ++i) {
    const double angle = RopeAngle(config, position, i);
    const double c = std::cos(angle);
    const double s = std::sin(angle);
    const RopePair p = RopePairIndices(config, i);
    const double a = head[static_cast<size_t>(p.first)];
    const double b = head[static_cast<size_t>(p.second)];
    head[static_cast<size_t>(p.first)] = static_cast<float>(a * c - b * s);
    head[static_cast<size_t>(p.second)] = static_cast<float>(a * s + b * c);
  }
}

int Argmax(std::span<const float> values) {
  REPRISE_CHECK(!values.empty());
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best]) best = i;
  }
  return static_cast<int>(best);
}

}  // namespace reprise::model
