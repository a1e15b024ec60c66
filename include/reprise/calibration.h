// Calibrating a model for this machine (docs/design.md §4), as `reprise calibrate` does and an app
// may at its first run: the latency of the prefill and recompute graphs at each capacity, the
// capacities chosen from them, and the quality guard's threshold. The results are kept in a
// folder; an Engine made with EngineOptions::calibration_dir = that folder uses them.
// This header includes nothing of Reprise's sources.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "reprise/defaults.h"
#include "reprise/status.h"

namespace reprise {

struct CalibrateOptions {
  std::string model_path;
  // Where the results are kept (created when missing); required.
  std::string calibration_dir;
  int num_threads = 0;  // 0 = every core; a calibration holds for its thread count
  // Capacities profiled: 32, 64, ..., max_capacity (a multiple of 32 is not required).
  int max_capacity = 512;
  int repetitions = 3;  // timed calls per capacity and graph (the median is kept)
  double recompute_ratio = kDefaultRecomputeRatio;
  // Lengths (tokens) of the pieces each graph kind processes in the target workload, with
  // their frequencies: prefill sees new-token runs, recompute sees reused runs. Empty = a
  // generic spread over 16..1024.
  std::map<int, double> prefill_lengths;
  std::map<int, double> recompute_lengths;
  // The guard's threshold = this x a high quantile of honest reuse's residual deviation
  // (lower: more fallbacks to a full prefill, better quality). >= 1.
  double guard_margin = 20.0;
  // Told `done` of `total` capacities profiled; called on the calibrating thread.
  std::function<void(int64_t done, int64_t total)> on_progress;
};

struct CalibrationReport {
  std::string machine;                 // CPU model and threads
  std::map<int, double> prefill_ms;    // capacity -> latency of one full call
  std::map<int, double> recompute_ms;  // capacity -> latency of one full call
  int prefill_capacity = 0;            // chosen (Lp)
  int recompute_capacity = 0;          // chosen (Ls)
  std::string capacities_path;         // where they were saved
  // The quality guard: the residual deviation of honest reuse on a built-in text, over
  // `guard_samples` recompute calls with the chosen graphs, and the threshold taken from it.
  int64_t guard_samples = 0;
  double guard_p50 = 0, guard_p90 = 0, guard_p99 = 0, guard_max = 0;
  double guard_quantile = 0;  // the quantile the threshold is taken at
  double guard_margin = 0;
  double guard_threshold = 0;
  std::string guard_path;
  // The figures above are those of the engine's default token selection
  // (EngineOptions::token_selection); the guard is measured for every selection, since the
  // residual depends on which tokens a selection leaves: its name -> threshold.
  std::map<std::string, double> guard_thresholds;
};

// Profiles, chooses, measures the guard and saves both results in calibration_dir. Takes a
// while (seconds to minutes: every capacity compiles and runs its graphs). Errors: those of
// loading the model; InvalidArgument (no folder, a capacity range or repetitions out of
// bounds); IoError (the folder cannot be written).
Result<CalibrationReport> CalibrateModel(const CalibrateOptions& options);

}  // namespace reprise
