#include "tools/accuracy_bench.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/model_maker.h"
#include "support/temp_dir.h"

namespace reprise::tools {
namespace {

std::string Make(const testing_support::TempDir& dir, const std::string& name,
                 const std::string& shape, DType type, bool q4_k_m = false) {
  convert::MakeModelOptions make;
  make.shape = shape;
  make.weight_type = type;
  make.q4_k_m_mix = q4_k_m;
  const std::string path = dir.path() + "/" + name + ".gguf";
  EXPECT_TRUE(convert::MakeModel(make, path).ok());
  return path;
}

AccuracyBenchOptions Options(const std::string& model) {
  AccuracyBenchOptions options;
  options.model_path = model;
  options.max_tokens = 64;
  options.step = 8;
  options.continuation_tokens = 8;
  options.num_threads = 2;
  return options;
}

TEST(AccuracyBenchTest, FloatWeightsMatchTheReferenceForward) {
  testing_support::TempDir dir;
  const Result<AccuracyBenchResult> r =
      RunAccuracyBench(Options(Make(dir, "f32", "tiny-256", DType::kF32)));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->tokens, 64);
  EXPECT_EQ(r->positions, 8);
  EXPECT_LT(r->kl_mean, 1e-6);
  EXPECT_EQ(r->top1_agreement, 1.0);
  EXPECT_EQ(r->continuation_agreement, 1.0);
  EXPECT_GT(r->reference_entropy_mean, 0.0);
}

// A Q4_K_M file: the engine runs it repacked to Q8_0; the repack's own error (against the
// file's exact values) is far below the quantization's (against the F32 weights it came from).
TEST(AccuracyBenchTest, RepackingKQuantsCostsLittleNextToQuantizingThem) {
  testing_support::TempDir dir;
  const std::string original = Make(dir, "f32", "tiny-256", DType::kF32);
  const std::string q4km = Make(dir, "q4km", "tiny-256", DType::kQ4_K, /*q4_k_m=*/true);
  const Result<AccuracyBenchResult> repack = RunAccuracyBench(Options(q4km));
  ASSERT_TRUE(repack.ok()) << repack.error().ToString();
  AccuracyBenchOptions against_original = Options(q4km);
  against_original.reference_path = original;
  const Result<AccuracyBenchResult> total = RunAccuracyBench(against_original);
  ASSERT_TRUE(total.ok()) << total.error().ToString();
  EXPECT_EQ(total->reference, original);
  EXPECT_GT(repack->kl_mean, 0.0);
  EXPECT_LT(repack->kl_mean * 4, total->kl_mean)
      << "repack " << repack->kl_mean << ", quantization " << total->kl_mean;
  const nlohmann::json json = nlohmann::json::parse(total->ToJson());
  EXPECT_EQ(json["positions"], total->positions);
  EXPECT_DOUBLE_EQ(json["kl_mean"].get<double>(), total->kl_mean);
}

TEST(AccuracyBenchTest, RejectsAReferenceOfAnotherVocabularyAndBadOptions) {
  testing_support::TempDir dir;
  AccuracyBenchOptions options = Options(Make(dir, "a", "tiny-256", DType::kF32));
  convert::MakeModelOptions other;  // a vocabulary of 49152, one layer to keep it small
  other.shape = "smollm2-135m";
  other.weight_type = DType::kQ4_0;
  other.num_layers = 1;
  options.reference_path = dir.path() + "/b.gguf";
  ASSERT_TRUE(convert::MakeModel(other, options.reference_path).ok());
  EXPECT_EQ(RunAccuracyBench(options).error().code(), StatusCode::kInvalidArgument);
  options.reference_path.clear();
  options.step = 0;
  EXPECT_EQ(RunAccuracyBench(options).error().code(), StatusCode::kInvalidArgument);
  options.step = 8;
  options.model_path = dir.path() + "/missing.gguf";
  EXPECT_FALSE(RunAccuracyBench(options).ok());
}

}  // namespace
}  // namespace reprise::tools
