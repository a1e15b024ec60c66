// Block layouts of the quantized tensor types, as published in the GGUF/ggml specification.
//
// Each struct is exactly one block as stored in a GGUF file (little-endian, no padding);
// static_asserts pin the sizes to base/dtype.h. `d`, `dmin` are IEEE half floats stored as
// their bit patterns.
#pragma once

#include <cstdint>

namespace reprise::kernels {

inline constexpr int kQK = 32;    // elements per block of the 32-element types
inline constexpr int kQK_K = 256;  // elements per super-block of the K-quants
inline constexpr int kKScaleBytes = 12;

// Q4_0: x = d * (q - 8), q in 0..15. qs[j] holds element j (low nibble) and j + 16 (high).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// Q4_1: x = d * q + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// Q5_0: x = d * (q - 16), q = nibble | (bit j of qh) << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Q5_1: x = d * q + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Q8_0: x = d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// Q2_K: 16 sub-blocks of 16; scales[i] = 4-bit scale | 4-bit min << 4.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// Q3_K: 16 sub-blocks of 16 with 6-bit scales packed into 12 bytes; hmask holds the high bit.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// Q4_K: 8 sub-blocks of 32; 6-bit scales and mins packed into 12 bytes.
// x = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};

// Q5_K: as Q4_K plus one high bit per element in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// Q6_K: 16 sub-blocks of 16; 4 low bits in ql, 2 high bits in qh, int8 scales.
// x = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace reprise::kernels
