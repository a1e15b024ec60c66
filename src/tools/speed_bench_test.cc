#include "tools/speed_bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "convert/model_maker.h"
#include "support/temp_dir.h"

namespace reprise::tools {
namespace {

std::string MakeTinyModel(const testing_support::TempDir& dir, DType type) {
  convert::MakeModelOptions make;
  make.shape = "tiny";
  make.weight_type = type;
  const std::string path = dir.path() + "/tiny.gguf";
  EXPECT_TRUE(convert::MakeModel(make, path).ok());
  return path;
}

TEST(SpeedBenchTest, ProfilesEachLengthAgainstTheMachinePeak) {
  testing_support::TempDir dir;
  SpeedBenchOptions options;
  options.model_path = MakeTinyModel(dir, DType::kQ8_0);
  options.num_threads = 2;
  options.prefill_lengths = {16, 40};
  options.repetitions = 1;
  options.run_decode = false;
  Result<SpeedBenchResult> result = RunSpeedBench(options);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_TRUE(result->peak.has_value());
  EXPECT_EQ(result->peak->threads, 2);
  EXPECT_GT(result->peak->int8_gmacs_per_second, 0);
  for (int length : {16, 40}) {
    SCOPED_TRACE(length);
    ASSERT_EQ(result->prefill_profile.count(length), 1u);
    const PrefillProfile& p = result->prefill_profile.at(length);
    EXPECT_NEAR(p.matmul_share + p.attention_share + p.other_share, 1.0, 1e-9);
    EXPECT_GT(p.int8_matmul_share, 0.0);  // Q8_0 layers
    EXPECT_LE(p.int8_matmul_share, 1.0);
    // Ideal time at peak over measured time. Both are timings taken a moment apart on a
    // machine others share, so no bound is asserted on the ratio (above 1 on a quiet machine
    // would mean the peak loops undercount; under load it happens: 1.02 was seen).
    EXPECT_GT(p.matmul_peak_fraction, 0.0);
    EXPECT_TRUE(std::isfinite(p.matmul_peak_fraction));
  }
  const nlohmann::json json = nlohmann::json::parse(result->ToJson());
  EXPECT_EQ(json["machine_peak"]["threads"], 2);
  EXPECT_GT(json["prefill_profile"]["40"]["matmul_peak_fraction"].get<double>(), 0.0);
  EXPECT_NE(result->ToText().find("% of peak"), std::string::npos) << result->ToText();
}

TEST(SpeedBenchTest, SkipsThePeakWhenAsked) {
  testing_support::TempDir dir;
  SpeedBenchOptions options;
  options.model_path = MakeTinyModel(dir, DType::kF32);
  options.num_threads = 1;
  options.prefill_lengths = {16};
  options.repetitions = 1;
  options.run_decode = false;
  options.measure_peak = false;
  Result<SpeedBenchResult> result = RunSpeedBench(options);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_FALSE(result->peak.has_value());
  EXPECT_EQ(result->prefill_profile.at(16).matmul_peak_fraction, 0.0);
  EXPECT_EQ(result->prefill_profile.at(16).int8_matmul_share, 0.0);  // float weights
  EXPECT_FALSE(nlohmann::json::parse(result->ToJson()).contains("machine_peak"));
}

}  // namespace
}  // namespace reprise::tools
