// Speed benchmarks of the inference backends: `reprise bench prefill|decode`.
//
// Prefill: tokens/s of running a prompt of each length from an empty context (random token
// ids, as llama-bench does). Decode: tokens/s of generating tokens one at a time. Each figure
// is the median of repeated runs; peak resident memory is reported too. Built on the public
// API: an Engine per figure (its context sized to it), a Session's token-level Evaluate, its
// OpProfile and Engine::MeasureMachinePeak.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "reprise/engine.h"

namespace reprise::tools {

struct SpeedBenchOptions {
  std::string model_path;
  int num_threads = 0;
  std::vector<int> prefill_lengths = {128, 512, 2048};
  int prefill_capacity = 0;  // 0 = min(length, 128) for each length (the engine default)
  int decode_tokens = 64;
  int repetitions = 3;
  bool run_prefill = true;
  bool run_decode = true;
  bool use_reference = false;
  // Measure the machine's peak on the benchmark's threads (Engine::MeasureMachinePeak, about a
  // second) and report the matmuls' fraction of it.
  bool measure_peak = true;
  // The int8 arithmetic of the matmuls (EngineOptions::int8_scheme, outlier_fraction) and where
  // the static schemes' activation calibration is kept.
  Int8Scheme int8_scheme = Int8Scheme::kPerBlock;
  double outlier_fraction = 0.01;
  std::string calibration_dir;
  // Out-of-order subgraph scheduling (EngineOptions): worker groups, window.
  int out_of_order_groups = 0;
  int out_of_order_window = 2;
  // Told of each timed run ("measuring", runs; the warm-up runs included).
  ProgressCallback progress;
};

// One extra prefill run of a length with every graph op timed (OpProfile): the shares of
// its time in the matmuls, in attention and in everything else, and the matmuls' rate.
struct PrefillProfile {
  double matmul_share = 0;
  double attention_share = 0;
  double other_share = 0;
  double matmul_gmacs_per_second = 0;  // multiply-adds (int8 or float) per second, / 1e9
  double int8_matmul_share = 0;        // of the matmuls' time, in the int8 (block) formats
  // The matmuls' time at the machine's peak (int8 work at the int8 peak, float work at the
  // float peak) over their measured time; 0 when the peak was not measured.
  double matmul_peak_fraction = 0;
};

struct SpeedBenchResult {
  std::string model;
  std::string backend;
  int num_threads = 0;
  std::map<int, double> prefill_tokens_per_second;  // by prompt length
  std::map<int, PrefillProfile> prefill_profile;    // by prompt length (compiled graphs only)
  std::optional<MachinePeak> peak;                  // of the kernels and threads the graphs ran on
  double decode_tokens_per_second = 0.0;
  double peak_rss_mb = 0.0;
  double model_file_mb = 0.0;
  double kv_cache_mb = 0.0;  // of the largest context benchmarked
  double packed_weights_mb = 0.0;

  std::string ToJson() const;
  std::string ToText() const;
};

// Errors: those of loading the model; InvalidArgument for bad options.
Result<SpeedBenchResult> RunSpeedBench(const SpeedBenchOptions& options);

// "peak on 2 threads (avx2 kernels): int8 356 GMAC/s (vpmaddubsw), ..." and a newline.
std::string MachinePeakText(const MachinePeak& peak);

}  // namespace reprise::tools
