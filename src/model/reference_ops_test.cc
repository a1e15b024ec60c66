#include "model/reference_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "base/random.h"

namespace reprise::model {
namespace {

ModelConfig RopeConfig(RopeStyle style, int head_dim, int rope_dims) {
  ModelConfig c;
  c.head_dim = head_dim;
  c.rope_dims = rope_dims;
  c.rope_theta = 10000.0f;
  c.rope_style = style;
  return c;
}

std::vector<float> RandomVector(Random& random, int size) {
  std::vector<float> v(static_cast<size_t>(size));
  for (float& x : v) x = static_cast<float>(random.NextGaussian());
  return v;
}

// R x, where R is the identity except for a 2x2 rotation [[c, -s], [s, c]] on each listed pair
// of dims (i, j), with angle position * theta^(-2k/rope_dims) for the k-th pair.
std::vector<float> RotateExplicitly(const std::vector<float>& x,
                                    const std::vector<std::pair<int, int>>& pairs, int64_t position,
                                    double theta, int rope_dims) {
  const size_t n = x.size();
  std::vector<std::vector<double>> r(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) r[i][i] = 1.0;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const double angle = static_cast<double>(position) / std::pow(theta, 2.0 * k / rope_dims);
    const auto [i, j] = pairs[k];
    r[i][i] = std::cos(angle);
    r[i][j] = -std::sin(angle);
    r[j][i] = std::sin(angle);
    r[j][j] = std::cos(angle);
  }
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (size_t j = 0; j < n; ++j) sum += r[i][j] * x[j];
    out[i] = static_cast<float>(sum);
  }
  return out;
}

TEST(ReferenceOpsTest, RmsNormMatchesFormulaAndMayAlias) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
  const std::vector<float> w = {0.5f, 1.0f, 2.0f, -1.0f};
  const double mean_square = (1.0 + 4.0 + 9.0 + 0.25) / 4.0;
  const double inv_rms = 1.0 / std::sqrt(mean_square + 1e-5);
  std::vector<float> out(4);
  RmsNorm(x, w, 1e-5f, out);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(out[i], x[i] * w[i] * inv_rms, 1e-6);
  std::vector<float> in_place = x;
  RmsNorm(in_place, w, 1e-5f, in_place);
  EXPECT_EQ(in_place, out);
}

TEST(ReferenceOpsTest, MatVecUsesOutInRows) {
  // Two rows ("out") of three values ("in"), as GGUF dims {3, 2}.
  const std::vector<float> m = {1, 2, 3, 4, 5, 6};
  const std::vector<float> x = {1, 0, -1};
  std::vector<float> out(2);
  MatVec(m, x, out);
  EXPECT_EQ(out, (std::vector<float>{-2.0f, -2.0f}));
}

TEST(ReferenceOpsTest, SoftmaxIsStableAndNormalised) {
  std::vector<float> x = {1000.0f, 1001.0f, 999.0f};
  SoftmaxInPlace(x);
  const double e = std::exp(1.0);
  const double sum = 1.0 + e + 1.0 / e;
  EXPECT_NEAR(x[0], 1.0 / sum, 1e-6);
  EXPECT_NEAR(x[1], e / sum, 1e-6);
  EXPECT_NEAR(x[2], (1.0 / e) / sum, 1e-6);
}

TEST(ReferenceOpsTest, SiluAndArgmax) {
  EXPECT_NEAR(Silu(0.0f), 0.0f, 1e-7);
  EXPECT_NEAR(Silu(2.0f), 2.0 / (1.0 + std::exp(-2.0)), 1e-6);
  EXPECT_NEAR(Silu(-30.0f), 0.0f, 1e-10);
  const std::vector<float> v = {0.0f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(Argmax(v), 1);  // the first of equal maxima
}

TEST(ReferenceOpsTest, RopeAngleFollowsThetaAndFreqFactors) {
  ModelConfig c = RopeConfig(RopeStyle::kInterleaved, 8, 8);
  EXPECT_NEAR(RopeAngle(c, 7, 0), 7.0, 1e-12);
  EXPECT_NEAR(RopeAngle(c, 7, 1), 7.0 * 0.1, 1e-12);  // 10000^(-2/8) = 0.1
  EXPECT_NEAR(RopeAngle(c, 7, 3), 7.0 * 0.001, 1e-12);
  // Llama 3 factors divide the frequency (the angle).
  c.rope_freq_factors = {1.0f, 4.0f, 8.0f, 2.0f};
  EXPECT_NEAR(RopeAngle(c, 7, 1), 7.0 * 0.1 / 4.0, 1e-12);
  EXPECT_NEAR(RopeAngle(c, 7, 2), 7.0 * 0.01 / 8.0, 1e-12);
}

TEST(ReferenceOpsTest, RopeInterleavedRotatesAdjacentPairs) {
  Random random(11);
  const ModelConfig c = RopeConfig(RopeStyle::kInterleaved, 8, 8);
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  for (int64_t position : {0, 1, 5, 123, 4000}) {
    std::vector<float> x = RandomVector(random, 8);
    const std::vector<float> expected = RotateExplicitly(x, pairs, position, 10000.0, 8);
    ApplyRope(c, position, x);
    for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(x[i], expected[i], 1e-5) << position << " " << i;
  }
}

TEST(ReferenceOpsTest, RopeNeoxRotatesHalfPairs) {
  Random random(12);
  const ModelConfig c = RopeConfig(RopeStyle::kNeox, 8, 8);
  const std::vector<std::pair<int, int>> pairs = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  for (int64_t position : {0, 1, 5, 123, 4000}) {
    std::vector<float> x = RandomVector(random, 8);
    const std::vector<float> expected = RotateExplicitly(x, pairs, position, 10000.0, 8);
    ApplyRope(c, position, x);
    for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(x[i], expected[i], 1e-5) << position << " " << i;
  }
}

TEST(ReferenceOpsTest, PartialRopeLeavesTrailingDimsAlone) {
  Random random(13);
  for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kNeox}) {
    const ModelConfig c = RopeConfig(style, 8, 4);
    const std::vector<std::pair<int, int>> pairs =
        style == RopeStyle::kInterleaved ? std::vector<std::pair<int, int>>{{0, 1}, {2, 3}}
                                         : std::vector<std::pair<int, int>>{{0, 2}, {1, 3}};
    std::vector<float> x = RandomVector(random, 8);
    const std::vector<float> expected = RotateExplicitly(x, pairs, 37, 10000.0, 4);
    ApplyRope(c, 37, x);
    for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(x[i], expected[i], 1e-5) << i;
    for (size_t i = 4; i < 8; ++i) EXPECT_EQ(x[i], expected[i]);
  }
}

TEST(ReferenceOpsTest, NeoxIsInterleavedOnPermutedDims) {
  // Moving neox dims (i, i + d/2) to interleaved slots (2i, 2i + 1) turns one style into the
  // other.
  Random random(14);
  const int d = 16;
  const ModelConfig neox = RopeConfig(RopeStyle::kNeox, d, d);
  const ModelConfig interleaved = RopeConfig(RopeStyle::kInterleaved, d, d);
  std::vector<float> x = RandomVector(random, d);
  std::vector<float> permuted(d);
  for (int i = 0; i < d / 2; ++i) {
    permuted[2 * i] = x[i];
    permuted[2 * i + 1] = x[i + d / 2];
  }
  ApplyRope(neox, 77, x);
  ApplyRope(interleaved, 77, permuted);
  for (int i = 0; i < d / 2; ++i) {
    EXPECT_EQ(x[i], permuted[2 * i]);
    EXPECT_EQ(x[i + d / 2], permuted[2 * i + 1]);
  }
}

TEST(ReferenceOpsTest, RopeDotProductDependsOnlyOnPositionDelta) {
  Random random(15);
  for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kNeox}) {
    ModelConfig c = RopeConfig(style, 16, 16);
    c.rope_freq_factors = {1, 1, 1, 2, 2, 4, 8, 8};
    const std::vector<float> q = RandomVector(random, 16);
    const std::vector<float> k = RandomVector(random, 16);
    for (int delta : {0, 1, 3, 50}) {
      // Reference: q at position delta, k at position 0.
      std::vector<float> q0 = q;
      std::vector<float> k0 = k;
      ApplyRope(c, delta, q0);
      ApplyRope(c, 0, k0);
      const double expected = Dot(q0, k0);
      for (int base : {1, 17, 1000, 30000}) {
        std::vector<float> qp = q;
        std::vector<float> kp = k;
        ApplyRope(c, base + delta, qp);
        ApplyRope(c, base, kp);
        EXPECT_NEAR(Dot(qp, kp), expected, 1e-4 * (1.0 + std::fabs(expected)))
            << "delta " << delta << " base " << base;
      }
    }
  }
}

TEST(ReferenceOpsTest, FreqFactorScalesPositions) {
  // With a factor f on every pair, position f * p rotates like position p without factors.
  Random random(16);
  ModelConfig scaled = RopeConfig(RopeStyle::kInterleaved, 8, 8);
  scaled.rope_freq_factors = {4, 4, 4, 4};
  const ModelConfig plain = RopeConfig(RopeStyle::kInterleaved, 8, 8);
  std::vector<float> a = RandomVector(random, 8);
  std::vector<float> b = a;
  ApplyRope(scaled, 12, a);
  ApplyRope(plain, 3, b);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

}  // namespace
}  // namespace reprise::model
