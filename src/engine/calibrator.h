// The calibration driver of `reprise calibrate` (docs/design.md §4): profiles the latency t(L) of
// the prefill and selective-recompute graphs at capacities that are multiples of 32, and picks
// the capacities Lp and Ls that minimise sum_n f(n) * ceil(n / L) * t(L) for a workload's
// length distribution f. The result is saved with engine/calibration.h and used by default.
// Apps and `reprise calibrate` reach it through reprise::CalibrateModel (reprise/calibration.h).
#pragma once

#include <map>

#include "base/progress.h"
#include "base/status.h"
#include "engine/calibration.h"
#include "engine/loaded_model.h"
#include "reprise/defaults.h"

namespace reprise::engine {

struct CalibrationOptions {
  int min_capacity = 32;
  int max_capacity = 512;
  int step = 32;
  int num_threads = 0;
  int repetitions = 3;
  double recompute_ratio = kDefaultRecomputeRatio;
  // Lengths (tokens) of the pieces each graph kind processes in the target workload, with
  // their frequencies: prefill sees new-token runs, recompute sees reused runs. Empty = a
  // default spread over 32..1024.
  std::map<int, double> prefill_lengths;
  std::map<int, double> recompute_lengths;
  // Told of each capacity profiled ("profiling", capacities).
  ProgressCallback progress;
};

// Profiles and chooses. Errors: InvalidArgument for bad ranges, those of the backends.
Result<Calibration> Calibrate(const LoadedModel& model, const CalibrationOptions& options);

// argmin over the profiled capacities of sum f(n) * ceil(n / L) * t(L).
int ChooseCapacity(const std::map<int, double>& latency_ms, const std::map<int, double>& lengths);

}  // namespace reprise::engine
