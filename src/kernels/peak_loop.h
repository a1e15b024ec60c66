// Peak loops: the multiply-add instruction of each kernel set run back to back on independent
// registers, with nothing else in the loop, to measure how many multiply-adds a core can do
// per second with it — the roof the matmul kernels are measured against (`reprise bench
// prefill` prints the matmuls' achieved fraction of it; bench/kernels/peak_bench.cc prints
// the peaks).
//
// Each set has an int8 loop (the instruction its block-format matmuls multiply bytes with) and
// a float loop (fused multiply-add on its widest float registers). The SIMD loops are inline
// assembly with 8-12 independent accumulators, enough to cover the instruction's latency on
// two pipes; the scalar set's loops are C++ with their inputs hidden from the optimiser.
#pragma once

#include <cstdint>

namespace reprise::kernels {

// Runs `rounds` rounds; returns the sum of the accumulators (lane 0 of each where the set's
// int8 loop keeps int16 or int32 lanes), so a test can check the work was done: the inputs
// are fixed (see each loop) and the result is exact while no lane wraps (float: while the
// sums stay below 2^24).
using PeakLoopFn = int64_t (*)(int64_t rounds);

struct PeakLoop {
  const char* instruction = nullptr;  // e.g. "vpdpbusd zmm"
  int64_t macs_per_round = 0;         // multiply-adds one round performs
  PeakLoopFn run = nullptr;
};

}  // namespace reprise::kernels
