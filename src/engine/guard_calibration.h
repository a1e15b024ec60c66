// Calibrating blend's quality guard (DESIGN.md §2): the guard sends a recompute call back to
// the prefill graph when the reused tokens it leaves deviate more than a threshold at the
// check layer, but the scale of that deviation depends on the model. So the threshold is
// measured on the model itself: honest reuse of a built-in text (sample_text.h) cut into
// documents, each cached alone and then reused in several new orders with blend, gives the
// distribution of the per-call residual deviation; the threshold is a high quantile of it
// times a wide margin (GuardCalibrationOptions::margin). Honest reuse then falls back rarely (by
// construction), and reuse that is badly wrong — KV of another text, damaged KV — lies orders of
// magnitude above it.
//
// The result is kept with the calibrations (calibration.h): `reprise calibrate` measures it,
// and an engine given a calibration folder without it measures it once at load (the quick
// pass) and saves it. ResolveQualityGuard is the one place that turns kGuardCalibrated into
// a threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/loaded_model.h"
#include "engine/reuse_session.h"

namespace reprise::engine {

struct GuardCalibrationOptions {
  int num_documents = 6;  // pieces of the sample text, cached alone
  int num_orders = 6;     // prompts reusing them in new orders
  double quantile = 0.99;
  // Honest reuse in real workloads deviates more than on the sample text (stories260K: the
  // largest per-query residual of chat averages 10x the sample's p99, of docqa-shuffled 15x),
  // while KV that is badly wrong deviates ~1000x more (negated KV: > 1). 20 keeps the guard's
  // cost within 2% of blend's speedup on those workloads; 10 buys 6x lower KL there for
  // 13-33% of the speedup (docs/benchmarks.md, `calibrate --guard-margin`).
  double margin = 20.0;
  uint64_t seed = 1;
};

struct GuardCalibration {
  std::vector<double> residuals;  // per recompute call that left reused rows, ascending
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  double quantile = 0, margin = 0;
  double threshold = 0;  // margin x the quantile

  std::string ToJson() const;
  static Result<GuardCalibration> FromJson(std::string_view json);
};

// Measures the honest residual distribution with `reuse` (its method, ratio and guard are
// overridden: blend, guard off). Errors: those of the sessions; InvalidArgument for bad options,
// a context too short for the text's documents, or when no recompute call ran.
Result<GuardCalibration> CalibrateGuard(const LoadedModel& model, const ReuseOptions& reuse,
                                        const GuardCalibrationOptions& options = {});

// The file a guard calibration is kept in, under `dir`: one per model and token selection (the
// deviation does not depend on the machine, but the residual does depend on which tokens the
// selection leaves: the query-aware ones leave 1.1-3x more than deviation's).
std::string GuardCalibrationPath(const std::string& dir, uint64_t fingerprint,
                                 graph::SelectionKey selection);
Status SaveGuardCalibration(const GuardCalibration& calibration, const std::string& path);
Result<GuardCalibration> LoadGuardCalibration(const std::string& path);

// When reuse->guard_deviation is kGuardCalibrated: the threshold kept in `dir` for this
// model and reuse->selection, measured now (the quick pass) and saved there when missing and
// `measure_if_missing`; 0 (off) without `dir` or when the measurement fails (logged). Other values
// are left as set. Returns the calibration used, if any.
std::optional<GuardCalibration> ResolveQualityGuard(const LoadedModel& model,
                                                    const std::string& dir, bool measure_if_missing,
                                                    ReuseOptions* reuse);

}  // namespace reprise::engine
