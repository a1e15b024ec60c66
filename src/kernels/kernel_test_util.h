// Helpers shared by the kernels' tests: deterministic random data, weight matrices in any
// stored type, and the kernel sets to compare.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/random.h"
#include "kernels/kernel_set.h"
#include "kernels/packed_matrix.h"
#include "kernels/quantize.h"

namespace reprise::kernels::testing {

inline std::vector<float> RandomFloats(uint64_t seed, int64_t n, float scale = 1.0f) {
  Random rng(seed);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = static_cast<float>(rng.NextGaussian()) * scale;
  return values;
}

// A rows x cols matrix stored as `dtype` (GGUF row-major bytes) from Gaussian values.
inline std::vector<uint8_t> RandomMatrix(uint64_t seed, DType dtype, int64_t rows, int64_t cols,
                                         float scale = 1.0f) {
  const std::vector<float> values = RandomFloats(seed, rows * cols, scale);
  const size_t row_bytes = RowBytes(dtype, cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    QuantizeRow(dtype, values.data() + r * cols, bytes.data() + r * row_bytes, cols);
  }
  return bytes;
}

// Packs a whole matrix; `data` owns the bytes the returned view points into.
struct OwnedPacked {
  std::vector<uint8_t> data;
  PackedMatrix view;
};

inline OwnedPacked Pack(PackedFormat format, DType src_type, const std::vector<uint8_t>& src,
                        int64_t rows, int64_t cols) {
  OwnedPacked packed;
  packed.data.assign(PackedMatrixBytes(format, rows, cols), 0xcd);
  PackMatrixRows(format, src_type, src.data(), rows, cols, 0, rows, packed.data.data());
  packed.view = PackedMatrix{format, rows, cols, packed.data.data()};
  return packed;
}

// The SIMD sets this machine can run (to compare each with ScalarKernels()).
inline std::vector<const KernelSet*> SimdSets() {
  std::vector<const KernelSet*> sets;
  if (const KernelSet* avx2 = Avx2Kernels()) sets.push_back(avx2);
  if (const KernelSet* vnni = AvxVnniKernels()) sets.push_back(vnni);
  if (const KernelSet* vnni512 = Avx512VnniKernels()) sets.push_back(vnni512);
  if (const KernelSet* neon = NeonDotKernels()) sets.push_back(neon);
  if (const KernelSet* i8mm = NeonI8mmKernels()) sets.push_back(i8mm);
  return sets;
}

}  // namespace reprise::kernels::testing
