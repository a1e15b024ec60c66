// A graph-size calibration (docs/design.md §4) as the engine uses it: the latency t(L) of the
// prefill and selective-recompute graphs at profiled capacities and the capacities Lp and Ls
// chosen for them, kept in one file per model and machine (tools/calibrator.h measures it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/reuse_session.h"

namespace reprise::engine {

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

// A description of this machine: the CPU model name and thread count.
std::string MachineDescription(int num_threads);

// The file a calibration is kept in, under `dir`: one per (model, machine).
std::string CalibrationPath(const std::string& dir, uint64_t fingerprint, int num_threads);

Status SaveCalibration(const Calibration& calibration, const std::string& path);
Result<Calibration> LoadCalibration(const std::string& path);

// The one place options meet a calibration: when `dir` holds one for `fingerprint` on this
// machine with `reuse->num_threads` threads (0 = every core), its Lp, Ls and their latencies
// replace those of `reuse`, and the result is true. False when there is none (or `dir` is
// empty); a file that cannot be read counts as none.
bool ApplyCalibration(const std::string& dir, uint64_t fingerprint, ReuseOptions* reuse);

// The full-prefill cost of one token that `reuse` was calibrated to (prefill latency over Lp),
// for StoreSettings::compute_ms_per_token; 0 without a calibration.
double ComputeMsPerToken(const ReuseOptions& reuse);

}  // namespace reprise::engine
