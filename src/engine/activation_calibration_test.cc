#include "engine/activation_calibration.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/file_util.h"
#include "convert/model_maker.h"
#include "engine/compiled_model.h"
#include "engine/graph_backend.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

class ActivationCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    convert::MakeModelOptions options;
    options.shape = "tiny";
    options.weight_type = DType::kQ8_0;
    ASSERT_TRUE(convert::MakeModel(options, dir_.path() + "/tiny.gguf").ok());
    model_ = std::move(LoadedModel::Load(dir_.path() + "/tiny.gguf")).value();
  }

  // The logits of a short prompt through a backend of `compiled`.
  std::vector<float> Logits(std::shared_ptr<const CompiledModel> compiled) {
    GraphBackendOptions options;
    options.context_tokens = 64;
    options.prefill_capacity = 16;
    auto backend = std::move(GraphBackend::Create(std::move(compiled), options)).value();
    const int32_t prompt[] = {1, 5, 9, 14, 3, 7, 22, 4};
    Result<std::span<const float>> logits = backend->Append(prompt);
    EXPECT_TRUE(logits.ok());
    return std::vector<float>(logits->begin(), logits->end());
  }

  testing_support::TempDir dir_;
  std::unique_ptr<LoadedModel> model_;
};

TEST_F(ActivationCalibrationTest, JsonRoundTripsAndRejectsBadFiles) {
  model::ActivationCalibration c;
  c.model_fingerprint = "00000000deadbeef";
  c.tokens = 12;
  c.channel_absmax = {{1.5f, 0.25f}, {3.0f}};
  Result<model::ActivationCalibration> back =
      ActivationCalibrationFromJson(ActivationCalibrationToJson(c));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->model_fingerprint, c.model_fingerprint);
  EXPECT_EQ(back->tokens, 12);
  EXPECT_EQ(back->channel_absmax, c.channel_absmax);
  for (const char* bad :
       {"", "[]", "{\"format\": \"other\"}",
        R"({"format": "reprise-activation-calibration-1", "model_fingerprint": "1", "tokens": 3,
            "channel_absmax": [[1, -2]]})",
        R"({"format": "reprise-activation-calibration-1", "model_fingerprint": "1", "tokens": 0,
            "channel_absmax": []})"}) {
    Result<model::ActivationCalibration> r = ActivationCalibrationFromJson(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kCorrupt) << bad;
  }
}

// A static scheme repacks the layers' matrices as kI8x8 with the measured scales, keeps the
// head as it was, stores the ranges it measured and finds them the next time; results stay
// close to the per-block path's.
TEST_F(ActivationCalibrationTest, StaticSchemeMeasuresStoresAndReusesTheRanges) {
  CompiledModelOptions options;
  options.num_threads = 2;
  const std::vector<float> per_block =
      Logits(std::move(CompiledModel::Create(*model_, options)).value());

  options.pack.static_int8 = StaticInt8For(Int8Scheme::kShadow, 0.05);
  options.calibration_dir = dir_.path();
  const std::string path = ActivationCalibrationPath(dir_.path(), model_->fingerprint());
  ASSERT_FALSE(std::filesystem::exists(path));
  auto compiled = std::move(CompiledModel::Create(*model_, options)).value();
  ASSERT_TRUE(std::filesystem::exists(path));
  const model::LayerWeights& layer = compiled->weights().layer(0);
  const model::OwnedPackedMatrix& down = *layer.down;
  EXPECT_EQ(down.view.format, kernels::PackedFormat::kI8x8);
  EXPECT_GT(layer.quant(model::ActivationPoint::kFfnHidden).scale, 0.0f);
  EXPECT_NE(compiled->weights().output().view.format, kernels::PackedFormat::kI8x8);
  int outliers = 0;
  for (int l = 0; l < compiled->config().num_layers; ++l) {
    for (const model::ActivationQuant& q : compiled->weights().layer(l).activation) {
      outliers += static_cast<int>(q.outliers.size());
    }
  }
  EXPECT_GT(outliers, 0);
  const std::vector<float> shadow = Logits(compiled);
  ASSERT_EQ(shadow.size(), per_block.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < shadow.size(); ++i) {
    diff += (shadow[i] - per_block[i]) * (shadow[i] - per_block[i]);
    norm += per_block[i] * per_block[i];
  }
  EXPECT_LT(diff, 0.01 * norm);

  // The stored ranges are used as they are: the same weights, the same logits.
  Result<std::string> stored = ReadFileToString(path);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Logits(std::move(CompiledModel::Create(*model_, options)).value()), shadow);
  // A damaged file is not trusted: measured again (and rewritten), same result.
  ASSERT_TRUE(WriteFileAtomically(path, "{not json").ok());
  EXPECT_EQ(Logits(std::move(CompiledModel::Create(*model_, options)).value()), shadow);
  EXPECT_EQ(*ReadFileToString(path), *stored);
}

TEST_F(ActivationCalibrationTest, RangesOfAnotherShapeAreRefused) {
  CompiledModelOptions options;
  options.num_threads = 2;
  options.pack.static_int8 = StaticInt8For(Int8Scheme::kPerTensor, 0.0);
  auto wrong = std::make_shared<model::ActivationCalibration>();
  wrong->tokens = 1;
  wrong->channel_absmax = {{1.0f, 2.0f}};
  options.pack.activation_calibration = wrong;
  Result<std::shared_ptr<const CompiledModel>> r = CompiledModel::Create(*model_, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::engine
