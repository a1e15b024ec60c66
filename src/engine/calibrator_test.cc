#include "engine/calibrator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "convert/model_maker.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {


TEST(ChooseCapacityTest, MinimisesCallsTimesLatencyOverTheLengthDistribution) {
  // t(L) grows slower than L (fixed per-call overhead), so big graphs win for long inputs
  // and lose on short ones, where the padding is wasted.
  const std::map<int, double> latency = {{32, 10}, {64, 14}, {128, 22}, {256, 40}};
  // Only short pieces: the smallest graph.
  EXPECT_EQ(ChooseCapacity(latency, {{20, 1}, {30, 5}}), 32);
  // Only 256-token pieces: one 256 call (40) beats 2x128 (44), 4x64 (56), 8x32 (80).
  EXPECT_EQ(ChooseCapacity(latency, {{256, 1}}), 256);
  // Mixes, worked by hand. n=30 (f 10), n=100 (f 2):
  //   L=32: 10*1*10 + 2*4*10 = 180;  L=64: 10*14 + 2*2*14 = 196;
  //   L=128: 10*22 + 2*22 = 264;     L=256: 10*40 + 2*40 = 480.
  EXPECT_EQ(ChooseCapacity(latency, {{30, 10}, {100, 2}}), 32);
  //   n=30 (f 1), n=100 (f 4): L=32: 10 + 160 = 170; L=64: 14 + 112 = 126;
  //   L=128: 22 + 88 = 110; L=256: 40 + 160 = 200.
  EXPECT_EQ(ChooseCapacity(latency, {{30, 1}, {100, 4}}), 128);
}

TEST(CalibratorTest, ProfilesMultiplesOf32AndChoosesAmongThem) {
  testing_support::TempDir dir;
  convert::MakeModelOptions make;
  make.shape = "tiny";
  make.weight_type = DType::kF32;
  const std::string path = dir.path() + "/tiny.gguf";
  ASSERT_TRUE(convert::MakeModel(make, path).ok());
  auto model = LoadedModel::Load(path);
  ASSERT_TRUE(model.ok()) << model.error().ToString();

  CalibrationOptions options;
  options.min_capacity = 32;
  options.max_capacity = 128;
  options.repetitions = 1;
  options.num_threads = 1;
  auto c = Calibrate(**model, options);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  for (const auto* table : {&c->prefill_ms, &c->recompute_ms}) {
    ASSERT_EQ(table->size(), 4u);
    for (const auto& [capacity, ms] : *table) {
      EXPECT_EQ(capacity % 32, 0);
      EXPECT_TRUE(std::isfinite(ms));
      EXPECT_GT(ms, 0.0);
    }
  }
  EXPECT_TRUE(c->prefill_ms.count(c->prefill_capacity));
  EXPECT_TRUE(c->recompute_ms.count(c->recompute_capacity));

  options.max_capacity = 16;  // below the minimum
  EXPECT_FALSE(Calibrate(**model, options).ok());
}

}  // namespace
}  // namespace reprise::engine
