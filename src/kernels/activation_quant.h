// Quantized activation rows: the int8 left operand of the block formats' matmuls (Q8_0x8,
// Q4_0x8, Q4_Kx8, Q6_Kx8).
//
// A float row of K values (K a multiple of 32) becomes, in one contiguous byte row:
//   [K int8 values q][K/32 float scales d][K/32 int32 block sums s]
// with x ~= d * q per 32-value block, q in [-127, 127] (d = amax / 127, round to nearest),
// and s = the sum of the block's q (the Q4_0 kernels use it to remove the weights' +8
// offset without a per-element subtraction). Rows of a batch sit at a fixed byte stride
// >= QuantizedRowBytes(K), so that callers can size one arena buffer per graph.
//
// The quantizing kernels themselves (plain, and fused with RMSNorm) are in kernel_set.h.
#pragma once

#include <cstdint>
#include <cstring>

namespace reprise::kernels {

inline constexpr int64_t kActivationBlock = 32;

// Bytes of one quantized row of k values. Requires: k % 32 == 0.
inline constexpr int64_t QuantizedRowBytes(int64_t k) { return k + k / kActivationBlock * 8; }

// Read access to one quantized row, for kernels and tests.
struct QuantizedRowView {
  const int8_t* q;        // [k]
  const uint8_t* scales;  // [k/32] floats (unaligned)
  const uint8_t* sums;    // [k/32] int32 (unaligned)

  QuantizedRowView(const uint8_t* row, int64_t k)
      : q(reinterpret_cast<const int8_t*>(row)),
        scales(row + k),
        sums(row + k + k / kActivationBlock * 4) {}

  float scale(int64_t block) const {
    float value;
    std::memcpy(&value, scales + 4 * block, sizeof(value));
    return value;
  }
  int32_t sum(int64_t block) const {
    int32_t value;
    std::memcpy(&value, sums + 4 * block, sizeof(value));
    return value;
  }
};

}  // namespace reprise::kernels
