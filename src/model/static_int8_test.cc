#include "model/static_int8.h"

#include <gtest/gtest.h>

namespace reprise::model {
namespace {

// Two layers of a model with dim 4 (ffn 8): one point with two planted outliers, one with a
// milder one, the rest flat.
ActivationCalibration MakeCalibration() {
  ActivationCalibration c;
  c.tokens = 10;
  for (int l = 0; l < 2; ++l) {
    c.channel_absmax.push_back({1, 1, 1, 1});              // attn_in
    c.channel_absmax.push_back({2, 2, 2, 2});              // attn_out
    c.channel_absmax.push_back({1, 0.5f, 1, 1});           // ffn_in
    c.channel_absmax.push_back({3, 3, 3, 3, 3, 3, 3, 3});  // ffn_hidden
  }
  c.channel_absmax[ActivationPointIndex(1, ActivationPoint::kFfnHidden)] = {3, 90, 3, 3,
                                                                            3, 60, 3, 3};
  c.channel_absmax[ActivationPointIndex(0, ActivationPoint::kAttnIn)] = {1, 1, 4, 1};
  return c;
}

TEST(StaticInt8PlanTest, PerBlockPlansNothing) {
  EXPECT_TRUE(PlanStaticInt8(MakeCalibration(), {}).empty());
}

TEST(StaticInt8PlanTest, PerTensorScalesCoverEveryChannel) {
  const std::vector<ActivationQuant> plan =
      PlanStaticInt8(MakeCalibration(), {Int8Scheme::kPerTensor, 0.5});
  ASSERT_EQ(plan.size(), 8u);
  for (const ActivationQuant& q : plan) EXPECT_TRUE(q.outliers.empty());
  EXPECT_FLOAT_EQ(plan[ActivationPointIndex(1, ActivationPoint::kFfnHidden)].scale, 90.0f / 127);
  EXPECT_FLOAT_EQ(plan[ActivationPointIndex(0, ActivationPoint::kAttnIn)].scale, 4.0f / 127);
  EXPECT_FLOAT_EQ(plan[ActivationPointIndex(0, ActivationPoint::kAttnOut)].scale, 2.0f / 127);
}

// The outlier budget (a share of all channels) goes to the channels that stand out most
// against their own tensor's median; the scale then covers the rest.
TEST(StaticInt8PlanTest, ShadowGivesTheBudgetToTheLargestOutliers) {
  // 40 channels in all: 3 / 40 gives three.
  const std::vector<ActivationQuant> plan =
      PlanStaticInt8(MakeCalibration(), {Int8Scheme::kPerTensorShadow, 3.0 / 40});
  const ActivationQuant& hidden = plan[ActivationPointIndex(1, ActivationPoint::kFfnHidden)];
  EXPECT_EQ(hidden.outliers, (std::vector<int32_t>{1, 5}));  // ratios 30 and 20
  EXPECT_FLOAT_EQ(hidden.scale, 3.0f / 127);
  const ActivationQuant& attn_in = plan[ActivationPointIndex(0, ActivationPoint::kAttnIn)];
  EXPECT_EQ(attn_in.outliers, (std::vector<int32_t>{2}));  // ratio 4
  EXPECT_FLOAT_EQ(attn_in.scale, 1.0f / 127);
  int total = 0;
  for (const ActivationQuant& q : plan) total += static_cast<int>(q.outliers.size());
  EXPECT_EQ(total, 3);
  // A zero budget is the per-tensor plan.
  const std::vector<ActivationQuant> none =
      PlanStaticInt8(MakeCalibration(), {Int8Scheme::kPerTensorShadow, 0.0});
  for (const ActivationQuant& q : none) EXPECT_TRUE(q.outliers.empty());
}

TEST(StaticInt8PlanTest, SchemeNamesRoundTrip) {
  for (Int8Scheme s :
       {Int8Scheme::kPerBlock, Int8Scheme::kPerTensor, Int8Scheme::kPerTensorShadow}) {
    Result<Int8Scheme> parsed = ParseInt8Scheme(Int8SchemeName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(ParseInt8Scheme("int4").ok());
}

}  // namespace
}  // namespace reprise::model
