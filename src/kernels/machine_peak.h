// The machine's peak for the matmuls' inner loops, measured on the threads a benchmark uses:
// int8 multiply-adds per second with the kernel set's int8 instruction, float multiply-adds
// per second with fused multiply-add, and the rate at which the cores together read memory.
// `reprise bench prefill` divides the matmuls' achieved rate by these (through
// Engine::MeasureMachinePeak); the Google Benchmark program bench/kernels/peak_bench.cc prints
// them per kernel set.
#pragma once

#include <string>

#include "kernels/kernel_set.h"

namespace reprise::kernels {

struct MachinePeak {
  std::string kernels;  // the kernel set's name
  int threads = 0;
  std::string int8_instruction;
  double int8_gmacs_per_second = 0;  // all threads together, / 1e9
  std::string float_instruction;
  double float_gmacs_per_second = 0;
  double read_gb_per_second = 0;  // streaming reads of a buffer far larger than the caches
};

// Runs the loops of `set.int8_peak` and `set.float_peak` on `threads` threads at once for
// about `seconds` each (best of three), and streaming reads of a 256 MiB buffer split
// between the threads (best of five). Requires: threads >= 1 and `set` runs on this CPU.
MachinePeak MeasureMachinePeak(const KernelSet& set, int threads, double seconds = 0.1);

// Runs `loop` for `rounds` rounds on each of `threads` threads started together; returns the
// wall time in seconds from the common start to the last thread's end.
double TimePeakLoop(const PeakLoop& loop, int threads, int64_t rounds);

// Reads `bytes` (rounded down to 64) of a buffer with `threads` threads, each its own slice,
// `passes` times; returns the wall time in seconds.
double TimeStreamingRead(const unsigned char* buffer, size_t bytes, int threads, int passes);

}  // namespace reprise::kernels
