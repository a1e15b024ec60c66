// Calibrating blend's quality guard (docs/design.md §2): the guard sends a recompute call back to
// the prefill graph when the reused tokens it leaves deviate more than a threshold at the
// check layer, but the scale of that deviation depends on the model. So the threshold is
// measured on the model itself: honest reuse of a built-in text (sample_text.h) cut into
// documents, each cached alone and then reused in several new orders with blend, gives the
// distribution of the per-call residual deviation; the threshold is a high quantile of it
// times a wide margin (GuardCalibrationOptions::margin). Honest reuse then falls back rarely (by
// construction), and reuse that is badly wrong — KV of another text, damaged KV — lies orders of
// magnitude above it.
//
// A threshold holds for the settings it was measured with (GuardCalibrationKey: the KV's
// arithmetic and every reuse setting that changes the residual). ResolveQualityGuard is the one
// place that turns kGuardCalibrated into a threshold: one kept for the same key (in this process,
// or in the calibration folder that `reprise calibrate` and engines write), or one measured now
// (the quick pass, ~7 prefills of up to 1k tokens) and kept — never silently none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/loaded_model.h"
#include "engine/reuse_session.h"

namespace reprise::engine {

struct GuardCalibrationOptions {
  int num_documents = 6;  // pieces of the sample text, cached alone
  int num_orders = 6;     // prompts reusing them in new orders
  double quantile = 0.99;
  // Honest reuse in real workloads deviates more than on the sample text, while KV that is
  // badly wrong deviates far more still; the margin sits between them, chosen for the speed
  // budget (docs/benchmarks.md, "The guard on by default"; `calibrate --guard-margin`).
  double margin = 20.0;
  uint64_t seed = 1;
};

struct GuardCalibration {
  std::string key;                // GuardCalibrationKey of the settings it was measured with
  std::vector<double> residuals;  // per recompute call that left reused rows, ascending
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  double quantile = 0, margin = 0;
  double threshold = 0;  // margin x the quantile

  std::string ToJson() const;
  static Result<GuardCalibration> FromJson(std::string_view json);
};

// Measures the honest residual distribution with `reuse` (its method and guard are overridden:
// blend, guard off; its other settings are used as they are). Requires: reuse.compiled (the
// arithmetic measured). Errors: those of the sessions; InvalidArgument for bad options, a
// context too short for the text's documents, or when no recompute call left a reused row.
Result<GuardCalibration> CalibrateGuard(const LoadedModel& model, const ReuseOptions& reuse,
                                        const GuardCalibrationOptions& options = {});

// The settings a threshold is measured for, in words: the KV's arithmetic
// (CompiledModel::kv_fingerprint: model, kernels, int8 scheme, calibrations) and every reuse
// setting that changes which tokens a recompute call leaves and how far they deviate (token
// selection, r, the graphs' capacities, check layer, adaptive thresholds, forced tokens,
// chunking, matching, scheduler). Requires: reuse.compiled.
std::string GuardCalibrationKey(const ReuseOptions& reuse);

// The file a guard calibration of `key` is kept in, under `dir`.
std::string GuardCalibrationPath(const std::string& dir, std::string_view key);
Status SaveGuardCalibration(const GuardCalibration& calibration, const std::string& path);
// Errors: those of reading the file; Corrupt for a malformed one.
Result<GuardCalibration> LoadGuardCalibration(const std::string& path);

// When reuse->guard_deviation is kGuardCalibrated: sets it to the threshold of
// GuardCalibrationKey(*reuse) — kept in this process, else in `dir` (may be empty: none), else
// measured now (CalibrateGuard) and kept in both; 0 only when blend keeps no reused token at
// these settings (r = 1: nothing to guard), said in the log. Other values are left as set.
// Requires: reuse->compiled. Errors: InvalidArgument when no threshold can be measured (e.g. a
// context too short for the calibration text), saying to set one (or 0 for none).
Status ResolveQualityGuard(const LoadedModel& model, const std::string& dir, ReuseOptions* reuse);

}  // namespace reprise::engine
