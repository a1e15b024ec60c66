// reprise::CalibrateModel (reprise/calibration.h), driven as an app would at its first run: the
// results land in the folder and an engine given that folder runs with them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "reprise/calibration.h"
#include "reprise/engine.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

TEST(CalibrateModelTest, KeepsItsResultsWhereAnEngineFindsThem) {
  testing_support::TempDir dir;
  CalibrateOptions options;
  options.model_path = kModel;
  options.calibration_dir = dir.path() + "/calibration";  // created
  options.num_threads = 2;
  options.max_capacity = 96;
  options.repetitions = 1;
  // Only 60-token pieces: a 64-token graph covers each in one call with the least padding.
  options.prefill_lengths = {{60, 1}};
  options.recompute_lengths = {{60, 1}};
  int64_t last_done = -1, last_total = 0;
  options.on_progress = [&](int64_t done, int64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  Result<CalibrationReport> report = CalibrateModel(options);
  ASSERT_TRUE(report.ok()) << report.error().ToString();
  EXPECT_EQ(last_total, 3);  // 32, 64, 96
  EXPECT_EQ(last_done, 3);
  ASSERT_EQ(report->prefill_ms.size(), 3u);
  ASSERT_EQ(report->recompute_ms.size(), 3u);
  for (const auto& [capacity, ms] : report->prefill_ms) EXPECT_GT(ms, 0.0) << capacity;
  EXPECT_TRUE(report->prefill_ms.count(report->prefill_capacity));
  EXPECT_TRUE(report->recompute_ms.count(report->recompute_capacity));
  EXPECT_TRUE(std::filesystem::exists(report->capacities_path));
  EXPECT_TRUE(std::filesystem::exists(report->guard_path));
  EXPECT_GT(report->guard_samples, 0);
  EXPECT_GT(report->guard_threshold, 0.0);
  EXPECT_DOUBLE_EQ(report->guard_threshold, report->guard_margin * report->guard_p99);
  // Every token selection has its threshold; the report's is the default selection's.
  ASSERT_EQ(report->guard_thresholds.size(), 3u);
  EXPECT_EQ(report->guard_thresholds.at(TokenSelectionName(EngineOptions{}.token_selection)),
            report->guard_threshold);
  for (const auto& [selection, threshold] : report->guard_thresholds) {
    EXPECT_GT(threshold, 0.0) << selection;
  }

  // An engine on as many threads runs with the chosen capacity; without the folder, not.
  EngineOptions engine_options;
  engine_options.model_path = kModel;
  engine_options.num_threads = 2;
  engine_options.reuse = ReuseMethod::kNone;
  engine_options.calibration_dir = options.calibration_dir;
  Result<std::unique_ptr<Engine>> calibrated = Engine::Create(engine_options);
  ASSERT_TRUE(calibrated.ok()) << calibrated.error().ToString();
  const std::string chosen = "prefill " + std::to_string(report->prefill_capacity) + ",";
  EXPECT_NE((*calibrated)->backend_name().find(chosen), std::string::npos)
      << (*calibrated)->backend_name() << " vs " << chosen;
}

TEST(CalibrateModelTest, BadOptionsAreRefusedBeforeAnythingRuns) {
  testing_support::TempDir dir;
  CalibrateOptions options;
  options.model_path = kModel;
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kInvalidArgument);  // no folder
  options.calibration_dir = dir.path();
  options.guard_margin = 0.5;
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kInvalidArgument);
  options.guard_margin = 20;
  options.repetitions = 0;
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kInvalidArgument);
  options.repetitions = 1;
  options.max_capacity = 16;  // below the smallest capacity
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kInvalidArgument);
  options.calibration_dir = dir.path() + "/calibration";
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kInvalidArgument);
  options.max_capacity = 64;
  options.model_path = dir.path() + "/missing.gguf";
  EXPECT_EQ(CalibrateModel(options).error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // nothing made, not even the folder
}

}  // namespace
}  // namespace reprise
