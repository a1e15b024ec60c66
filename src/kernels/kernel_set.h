// KernelSet: the table of compute kernels the graph runtime calls, chosen once at run time.
//
// Every kernel exists as a portable scalar reference and, where it pays, SIMD versions
// (AVX2 + FMA + F16C, AVX-VNNI, AVX-512 VNNI, NEON DotProd, NEON I8MM) compiled in their own
// translation units with their own flags and reached only through this table after CPU
// detection (base/cpu_features.h). All tables have the same entries with the same contracts
// (see matmul.h, elementwise.h, attention.h), so tests run every SIMD kernel against its
// scalar twin, and a caller can force the scalar set.
//
// Kernels never allocate, do I/O or start threads; callers pass buffers and split work into
// ranges (ThreadPool::ParallelFor).
#pragma once

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/peak_loop.h"

namespace reprise::kernels {

// Immutable after construction; the returned references live for the whole process.
struct KernelSet {
  // "scalar", "avx2", "avx-vnni", "avx512-vnni", "neon-dotprod", "neon-i8mm"
  const char* name = nullptr;

  MatMulFn matmul = nullptr;
  QuantizeRowFn quantize_row = nullptr;
  StaticQuantizeRowFn static_quantize_row = nullptr;
  RmsNormFn rms_norm = nullptr;
  RmsNormQuantizeFn rms_norm_quantize = nullptr;
  RopeFn rope = nullptr;
  SiluMulFn silu_mul = nullptr;
  SoftmaxFn softmax = nullptr;
  AddFn add = nullptr;
  F32ToF16Fn f32_to_f16 = nullptr;
  F16ToF32Fn f16_to_f32 = nullptr;
  AttentionFn attention = nullptr;

  // The packed format a model's Q6_K weights are packed into for this set (every set's matmul
  // takes every format): Q6_Kx8 (its own 6.56 bits, exact) where its products cost no more
  // than Q8_0's — the scalar set, and AVX2, whose Q8_0 takes two multiplies per 32 products
  // against Q6_Kx8's one plus a sign; Q8_0x8 (requantized, 8.5 bits) where one instruction
  // multiplies 4 byte pairs (vpdpbusd, sdot) and Q6_Kx8's scale per 16 columns adds an int32
  // multiply per half block, which costs prompts more than decode gains (docs/benchmarks.md,
  // "Figures behind constants in the code"); prompts come first.
  PackedFormat q6_k_format = PackedFormat::kQ6_Kx8;

  // The multiply-add instructions the matmuls are measured against (peak_loop.h).
  PeakLoop int8_peak;
  PeakLoop float_peak;
};

// The portable reference kernels.
const KernelSet& ScalarKernels();

// The AVX2 kernels, or null when this CPU (or OS) cannot run them.
const KernelSet* Avx2Kernels();

// The AVX2 kernels with the block-format matmuls' int8 dot products in AVX-VNNI (vpdpbusd on
// ymm: Intel client CPUs since Alder Lake, AMD since Zen 5), or null when this CPU cannot.
const KernelSet* AvxVnniKernels();

// The AVX2 kernels with the block-format matmuls in AVX-512 VNNI (vpdpbusd on zmm: Intel
// since Ice Lake, AMD since Zen 4), or null when this CPU (or OS) cannot run them.
const KernelSet* Avx512VnniKernels();

// AArch64 (phones, ARM laptops): every kernel in NEON — the block-format and float matmuls
// with the int8 dot products in sdot (Armv8.2-A DotProd), the attention and the row kernels
// on 128-bit vectors. Null when the CPU lacks DotProd, or on other architectures.
const KernelSet* NeonDotKernels();

// The NEON DotProd kernels with the block-format matmuls of two or more activation rows
// (prefill) in smmla (Armv8.6-A I8MM: Cortex-A710/X2 and later); one-row calls (decode) and
// every other kernel are NeonDotKernels()'. Null when the CPU lacks DotProd or I8MM, or on
// other architectures.
const KernelSet* NeonI8mmKernels();

// The fastest set this CPU runs: Avx512VnniKernels(), else AvxVnniKernels(), else
// Avx2Kernels(), else NeonI8mmKernels(), else NeonDotKernels(), else ScalarKernels(). The
// environment variable REPRISE_KERNELS=avx-vnni, =avx2, =neon-dotprod or =scalar picks a
// narrower set (to compare the sets on one machine); it is read once.
const KernelSet& BestKernels();

}  // namespace reprise::kernels
