// Graph-size calibration (DESIGN.md §4): profile the latency t(L) of the prefill and
// selective-recompute graphs at capacities that are multiples of 32, and pick the capacities
// Lp and Ls that minimise sum_n f(n) * ceil(n / L) * t(L) for a workload's length
// distribution f. Results are kept per model and machine, and used by default.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "engine/loaded_model.h"

namespace reprise::engine {

struct CalibrationOptions {
  int min_capacity = 32;
  int max_capacity = 512;
  int step = 32;
  int num_threads = 0;
  int repetitions = 3;
  double recompute_ratio = 0.25;
  // Lengths (tokens) of the pieces each graph kind processes in the target workload, with
  // their frequencies: prefill sees new-token runs, recompute sees reused runs. Empty = a
  // default spread over 32..1024.
  std::map<int, double> prefill_lengths;
  std::map<int, double> recompute_lengths;
  // Told of each capacity profiled ("profiling", capacities).
  ProgressCallback progress;
};

struct Calibration {
  std::string model_fingerprint;  // hex
  std::string machine;            // CPU model and threads
  std::map<int, double> prefill_ms;    // capacity -> latency of one full call
  std::map<int, double> recompute_ms;  // capacity -> latency of one full call
  int prefill_capacity = 0;    // Lp chosen
  int recompute_capacity = 0;  // Ls chosen

  std::string ToJson() const;
  static Result<Calibration> FromJson(std::string_view json);
  // Latency of one call at `capacity` (interpolated between profiled points).
  double PrefillMs(int capacity) const;
  double RecomputeMs(int capacity) const;
};

// Profiles and chooses. Errors: InvalidArgument for bad ranges, those of the backends.
Result<Calibration> Calibrate(const LoadedModel& model, const CalibrationOptions& options);

// argmin over the profiled capacities of sum f(n) * ceil(n / L) * t(L).
int ChooseCapacity(const std::map<int, double>& latency_ms, const std::map<int, double>& lengths);

// A description of this machine: the CPU model name and thread count.
std::string MachineDescription(int num_threads);

// The file a calibration is kept in, under `dir`: one per (model, machine).
std::string CalibrationPath(const std::string& dir, uint64_t fingerprint, int num_threads);

Status SaveCalibration(const Calibration& calibration, const std::string& path);
Result<Calibration> LoadCalibration(const std::string& path);

}  // namespace reprise::engine
