// Progress of long work (making and converting models, calibration, benchmarks, warming a
// cache): the layer doing the work reports it through a `ProgressCallback` in its options, and
// the layer that owns the terminal (cli/, see cli/progress_bar.h) decides how to show it.
// Nothing here does I/O, so library code stays free of terminal concerns.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace reprise {

// `done` of `total` units of one stage of work. The views live only during the call.
struct ProgressUpdate {
  std::string_view stage;   // what the work is: "writing tensors", "queries"
  int64_t done = 0;         // units finished so far, in [0, total]
  int64_t total = 0;        // units in the stage; 0 = not known
  std::string_view unit;    // "layers", "queries", "capacities"
  std::string_view detail;  // what is being done now ("blend"); may be empty
};

// Called on the thread that does the work, between units; it should return quickly. An empty
// callback reports nothing.
using ProgressCallback = std::function<void(const ProgressUpdate&)>;

// Calls `progress` with one update when it is set.
inline void ReportProgress(const ProgressCallback& progress, std::string_view stage, int64_t done,
                           int64_t total, std::string_view unit, std::string_view detail = {}) {
  if (progress) progress(ProgressUpdate{stage, done, total, unit, detail});
}

}  // namespace reprise
