// The arithmetic that shapes a model's KV, as one 64-bit identity: what makes cached KV
// "exact" — bit for bit what this engine computes now — rather than merely KV of the same
// model and text (docs/reliability.md, "What exact means").
//
// KV of the same tokens is the same bits only when every input of the arithmetic is the same:
//  - the model file (LoadedModel::fingerprint);
//  - the packed weights as the kernels read them: each matrix's packed format (a forced
//    weight format, Q6_K held as Q6_Kx8 or requantized to Q8_0x8), the int8 scheme's
//    per-tensor activation scales and shadow outlier channels (they come from the int8
//    scheme, the outlier fraction and the activation calibration);
//  - the kernel set (its float kernels sum in other orders);
//  - this engine's arithmetic version (kKvArithmeticVersion), bumped by any change to the
//    kernels, graphs or packing that may change KV bits, so that a store written by an
//    earlier build is not taken as exact by a later one.
// What does not enter it, because it does not change the bits (each tested: kv_arithmetic_test):
// thread counts, the prefill graph's capacity, static shapes, out-of-order scheduling, the
// decode graph against the prefill graph, batched decoding.
//
// The identity is the "model fingerprint" of chunk content hashes (kv::HashTokens) and of the
// store's rows and KV files: KV of other arithmetic is never found, so it is a miss, never
// reused as exact.
#pragma once

#include <cstdint>
#include <string>

#include "engine/loaded_model.h"
#include "kernels/kernel_set.h"
#include "model/packed_weights.h"

namespace reprise::engine {

// Bump when a change to the kernels, the graphs or the packing may change the bits of the KV
// (or of the logits) this engine computes for the same model, options and tokens.
inline constexpr uint32_t kKvArithmeticVersion = 1;

// The identity of the KV that `kernels` computes over `weights` (packed from `model`).
uint64_t KvArithmeticFingerprint(const LoadedModel& model, const model::PackedWeights& weights,
                                 const kernels::KernelSet& kernels);

// The same inputs in words, for logs and reports: "kernels avx512-vnni, int8 per-block,
// weights q8_0x8 (210), arithmetic v1".
std::string DescribeKvArithmetic(const model::PackedWeights& weights,
                                 const kernels::KernelSet& kernels);

}  // namespace reprise::engine
