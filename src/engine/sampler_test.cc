#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace reprise::engine {
namespace {

TEST(SamplerTest, GreedyPicksArgmaxAndFirstOnTies) {
  Sampler s = std::move(Sampler::Create({.temperature = 0.0f})).value();
  const float logits[] = {0.1f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, RejectsBadOptions) {
  EXPECT_FALSE(Sampler::Create({.temperature = -1.0f}).ok());
  EXPECT_FALSE(Sampler::Create({.temperature = 1.0f, .top_k = -2}).ok());
  EXPECT_FALSE(Sampler::Create({.temperature = 1.0f, .top_p = 0.0f}).ok());
  EXPECT_FALSE(Sampler::Create({.temperature = 1.0f, .top_p = 1.5f}).ok());
}

TEST(SamplerTest, TopKOneIsGreedy) {
  Sampler s = std::move(Sampler::Create({.temperature = 1.5f, .top_k = 1, .seed = 3})).value();
  const float logits[] = {0.1f, 0.3f, 0.2f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplerTest, SameSeedSameDraws) {
  const float logits[] = {1.0f, 1.1f, 0.9f, 1.05f, 0.5f};
  Sampler a = std::move(Sampler::Create({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 9})).value();
  Sampler b = std::move(Sampler::Create({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 9})).value();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Sample(logits), b.Sample(logits));
}

TEST(SamplerTest, FrequenciesFollowSoftmax) {
  const float logits[] = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
  Sampler s = std::move(Sampler::Create({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 1})).value();
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.Sample(logits);
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.02);
}

TEST(SamplerTest, TopPCutsTheTail) {
  // Probabilities ~0.88, 0.12, tiny: top-p 0.5 keeps only the first.
  const float logits[] = {2.0f, 0.0f, -10.0f};
  Sampler s = std::move(Sampler::Create({.temperature = 1.0f, .top_k = 0, .top_p = 0.5f, .seed = 2})).value();
  for (int i = 0; i < 200; ++i) EXPECT_EQ(s.Sample(logits), 0);
}

TEST(SamplerTest, IgnoresNonFiniteLogits) {
  const float logits[] = {-INFINITY, 1.0f, NAN};
  Sampler s = std::move(Sampler::Create({.temperature = 1.0f, .seed = 2})).value();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.Sample(logits), 1);
}

}  // namespace
}  // namespace reprise::engine
