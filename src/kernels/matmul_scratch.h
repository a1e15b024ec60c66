// The matmul drivers' per-thread scratch: weights prepared once per group and M chunk (split
// nibbles, unpacked 6-bit values, zmm group pairs, a row's half sums) and activation rows
// rewritten once per M chunk (biased to unsigned). One buffer of each kind per thread, shared
// by every driver and instruction set: calls on a thread never nest, and each call prepares
// what it reads.
//
// The buffers only grow, and at a thread's first use both grow to at least
// kMinMatMulScratchBytes: which pool thread runs which part of a matrix varies from call to
// call, so a thread that has run any matmul must not need to allocate for another one later
// (running a compiled graph allocates nothing: GraphNoAllocationTest); the engine's pools
// allocate them as their threads start (ReserveThreadMatMulScratch). 512 KiB covers every
// driver's need up to K = 13,000 columns (the largest, Q5_Kx8 group pairs on zmm: 40 bytes per
// column).
#pragma once

#include <cstddef>
#include <cstdint>

namespace reprise::kernels {

inline constexpr size_t kMinMatMulScratchBytes = 512 * 1024;

enum class MatMulScratch { kPreparedWeights, kRows };

// This thread's buffer `which`, at least `bytes` long. Valid until the thread's next call.
uint8_t* ThreadMatMulScratch(MatMulScratch which, int64_t bytes);

// Allocates this thread's buffers now (ThreadPoolOptions::thread_start of the pools that run
// compiled graphs), so that the thread's first matmul allocates nothing.
void ReserveThreadMatMulScratch();

}  // namespace reprise::kernels
