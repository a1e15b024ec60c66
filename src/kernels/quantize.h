// Conversion of tensor rows between float and the stored types (dequantize / quantize).
//
// Scalar reference code, written from the published block layouts (quant_blocks.h). Used at
// load time (weights are dequantized or repacked once), by the reference forward pass, by
// `make-model` and the importers. No allocation, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace reprise::kernels {

// True for the types DequantizeRow accepts: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool CanDequantize(DType dtype);

// True for the types QuantizeRow can produce: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q3_K, Q4_K, Q5_K, Q6_K.
bool CanQuantize(DType dtype);

// Bytes of a row of `n` elements. Requires: n is a multiple of the type's block size.
size_t RowBytes(DType dtype, int64_t n);

// dst[0..n) = the values of the row at `src`.
// Requires: CanDequantize(dtype), n a multiple of the block size, src holds RowBytes bytes.
void DequantizeRow(DType dtype, const uint8_t* src, float* dst, int64_t n);

// Writes the row src[0..n) into `dst` in the stored format (round to nearest; K-quants
// pick scales by a simple search, not llama.cpp's importance-weighted optimisation).
// Requires: CanQuantize(dtype), n a multiple of the block size, dst holds RowBytes bytes.
void QuantizeRow(DType dtype, const float* src, uint8_t* dst, int64_t n);

}  // namespace reprise::kernels
