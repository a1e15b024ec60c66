#include "engine/calibration.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

TEST(CalibrationTest, JsonRoundTripAndInterpolation) {
  Calibration c;
  c.model_fingerprint = "00000000deadbeef";
  c.machine = "test cpu, 2 threads";
  c.prefill_ms = {{32, 4.0}, {64, 6.0}};
  c.recompute_ms = {{32, 3.0}, {64, 5.0}, {96, 9.0}};
  c.prefill_capacity = 64;
  c.recompute_capacity = 32;
  auto back = Calibration::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->model_fingerprint, c.model_fingerprint);
  EXPECT_EQ(back->machine, c.machine);
  EXPECT_EQ(back->prefill_ms, c.prefill_ms);
  EXPECT_EQ(back->recompute_ms, c.recompute_ms);
  EXPECT_EQ(back->prefill_capacity, 64);
  EXPECT_EQ(back->recompute_capacity, 32);

  EXPECT_DOUBLE_EQ(c.PrefillMs(32), 4.0);
  EXPECT_DOUBLE_EQ(c.PrefillMs(48), 5.0);       // between profiled points
  EXPECT_DOUBLE_EQ(c.PrefillMs(128), 12.0);     // past the last: proportional
  EXPECT_DOUBLE_EQ(c.RecomputeMs(16), 1.5);     // before the first: proportional
  EXPECT_DOUBLE_EQ(c.RecomputeMs(80), 7.0);
}

TEST(CalibrationTest, CorruptFilesAreErrorsNotCrashes) {
  for (const char* text :
       {"", "[]", "{}", "not json", R"({"model_fingerprint": 1})",
        R"({"model_fingerprint":"a","machine":"m","prefill_ms":{"x":1},"recompute_ms":{},
            "prefill_capacity":32,"recompute_capacity":32})",
        R"({"model_fingerprint":"a","machine":"m","prefill_ms":{"0":1},"recompute_ms":{"32":1},
            "prefill_capacity":32,"recompute_capacity":32})",
        R"({"model_fingerprint":"a","machine":"m","prefill_ms":{"32":-1},"recompute_ms":{"32":1},
            "prefill_capacity":32,"recompute_capacity":32})",
        R"({"model_fingerprint":"a","machine":"m","prefill_ms":{"32":1},"recompute_ms":{"32":1},
            "prefill_capacity":0,"recompute_capacity":32})"}) {
    auto c = Calibration::FromJson(text);
    EXPECT_FALSE(c.ok()) << text;
    if (!c.ok()) {
      EXPECT_EQ(c.error().code(), StatusCode::kCorrupt) << text;
    }
  }
}

TEST(CalibrationTest, SaveAndLoadKeepOneFilePerModelAndMachine) {
  testing_support::TempDir dir;
  const std::string a = CalibrationPath(dir.path(), 1, 2);
  EXPECT_NE(a, CalibrationPath(dir.path(), 2, 2));  // another model
  EXPECT_NE(a, CalibrationPath(dir.path(), 1, 4));  // other threads
  Calibration c;
  c.model_fingerprint = "1";
  c.machine = MachineDescription(2);
  c.prefill_ms = {{32, 1.0}};
  c.recompute_ms = {{32, 1.0}};
  c.prefill_capacity = c.recompute_capacity = 32;
  ASSERT_TRUE(SaveCalibration(c, a).ok());
  auto back = LoadCalibration(a);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->machine, c.machine);
  EXPECT_FALSE(LoadCalibration(dir.path() + "/missing.json").ok());
}

}  // namespace
}  // namespace reprise::engine
