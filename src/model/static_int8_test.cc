#include "model/static_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/packed_matrix.h"
#include "model/packed_weights.h"
#include "model/test_model_builder.h"

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
      PlanStaticInt8(MakeCalibration(), {Int8Scheme::kShadow, 3.0 / 40});
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
      PlanStaticInt8(MakeCalibration(), {Int8Scheme::kShadow, 0.0});
  for (const ActivationQuant& q : none) EXPECT_TRUE(q.outliers.empty());
}

TEST(StaticInt8PlanTest, SchemeNamesRoundTrip) {
  for (Int8Scheme s :
       {Int8Scheme::kPerBlock, Int8Scheme::kPerTensor, Int8Scheme::kShadow}) {
    Result<Int8Scheme> parsed = ParseInt8Scheme(Int8SchemeName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(ParseInt8Scheme("int4").ok());
}

// A K-quant source is quantized to int8 once, from its own values: each stored int8 weight is
// within half a step (its row's amax / 127 / 2) of the file's value. Requantizing to Q8_0
// first, as packing a K-quant alone does (Q6_K on the sets that prefer Q8_0 for it,
// KernelSet::q6_k_format), adds that format's error on top and breaks the bound.
TEST(StaticInt8PackTest, KQuantSourcesAreQuantizedOnceFromTheirOwnValues) {
  for (const auto& [dtype, q6_k_format] :
       std::vector<std::pair<DType, std::optional<kernels::PackedFormat>>>{
           {DType::kQ4_K, std::nullopt},
           {DType::kQ6_K, std::nullopt},
           {DType::kQ6_K, kernels::PackedFormat::kQ8_0x8}}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)) + (q6_k_format ? " preferring q8_0x8" : ""));
    TestModelSpec spec;
    spec.num_layers = 1;
    spec.embedding_dim = 256;
    spec.ffn_dim = 256;
    spec.num_heads = 4;
    spec.num_kv_heads = 2;
    spec.vocab_size = 32;
    spec.matrix_dtype = dtype;
    const TestModel model = MakeTestModel(spec);
    const std::vector<uint8_t> bytes = TestModelBytes(model);
    Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
    ASSERT_TRUE(file.ok()) << file.error().ToString();
    Result<ModelConfig> config = ModelConfig::FromGguf(*file);
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    auto pool = ThreadPool::Create({.num_threads = 2});
    ASSERT_TRUE(pool.ok());
    auto calibration = std::make_shared<ActivationCalibration>();
    calibration->tokens = 1;
    for (const int channels : {256, 256, 256, 256}) {  // attn_in, attn_out, ffn_in, ffn_hidden
      calibration->channel_absmax.emplace_back(static_cast<size_t>(channels), 1.0f);
    }
    PackOptions options;
    options.q6_k_format = q6_k_format;
    options.static_int8.scheme = Int8Scheme::kPerTensor;
    options.activation_calibration = calibration;
    Result<std::unique_ptr<PackedWeights>> packed =
        PackedWeights::Create(*file, *config, **pool, options);
    ASSERT_TRUE(packed.ok()) << packed.error().ToString();
    const LayerWeights& layer = (*packed)->layer(0);
    const std::pair<const OwnedPackedMatrix*, const char*> matrices[] = {
        {layer.down.get(), "blk.0.ffn_down.weight"},
        {layer.output.get(), "blk.0.attn_output.weight"}};
    for (const auto& [matrix, name] : matrices) {
      SCOPED_TRACE(name);
      ASSERT_NE(matrix, nullptr);
      ASSERT_EQ(matrix->view.format, kernels::PackedFormat::kI8x8);
      const TestTensor& source = model.Get(name);
      const int64_t cols = matrix->view.cols;
      std::vector<float> row(static_cast<size_t>(cols));
      int outside = 0;
      for (int64_t r = 0; r < matrix->view.rows; ++r) {
        kernels::UnpackRow(matrix->view, r, row.data());
        const float* exact = source.values.data() + r * cols;
        float amax = 0;
        for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(exact[c]));
        const float half_step = amax / 127.0f / 2.0f * 1.0001f + 1e-12f;
        for (int64_t c = 0; c < cols; ++c) outside += std::fabs(row[c] - exact[c]) > half_step;
      }
      EXPECT_EQ(outside, 0);
    }
  }
}

}  // namespace
}  // namespace reprise::model
