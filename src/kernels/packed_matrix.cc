#include "kernels/packed_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "kernels/quantize_internal.h"  // UnpackScaleMinK4

namespace reprise::kernels {
namespace {

constexpr int64_t kQ8GroupBlockBytes = kPackRows * 2 + kPackRows * kQK;      // 272
constexpr int64_t kQ4GroupBlockBytes = kPackRows * 2 + kPackRows * kQK / 2;  // 144
// Q4_Kx8's blocks are kQ4GroupBlockBytes too (their 16-byte header holds scales and mins).
constexpr int64_t kQ4KSuperHeaderBytes = kPackRows * 4;  // 32

// Source rows are converted in slices of this many columns (a multiple of every block size),
// through stack buffers: packing allocates nothing.
constexpr int64_t kSliceCols = 256;

void PutU16(uint8_t* dst, uint16_t value) { std::memcpy(dst, &value, sizeof(value)); }
uint16_t GetU16(const uint8_t* src) {
  uint16_t value;
  std::memcpy(&value, src, sizeof(value));
  return value;
}

// Writes `row` (of its group) of block `b` of a Q8_0x8 group from one Q8_0 block.
void PlaceQ8Block(const BlockQ8_0& block, int64_t row, uint8_t* group_block) {
  PutU16(group_block + 2 * row, block.d);
  int8_t* q = reinterpret_cast<int8_t*>(group_block + 2 * kPackRows);
  for (int c = 0; c < 8; ++c) {
    std::memcpy(q + (c * kPackRows + row) * 4, block.qs + 4 * c, 4);
  }
}

void PlaceQ4Block(const BlockQ4_0& block, int64_t row, uint8_t* group_block) {
  PutU16(group_block + 2 * row, block.d);
  uint8_t* q = group_block + 2 * kPackRows;
  for (int p = 0; p < 4; ++p) {
    std::memcpy(q + (p * kPackRows + row) * 4, block.qs + 4 * p, 4);
  }
}

// Q4_Kx8: a group of K columns is K / 256 super-block headers of 32 bytes (8 half-float d,
// then 8 half-float dmin), then K / 32 blocks of 144 bytes: 8 6-bit scales, 8 6-bit mins (a
// byte each), 128 nibble bytes laid out as Q4_0x8's.
int64_t Q4KBlockOffset(int64_t cols, int64_t b) {
  return cols / kQK_K * kQ4KSuperHeaderBytes + b * kQ4GroupBlockBytes;
}

// Row `r` of super-block `sb` of a Q4_Kx8 or Q5_Kx8 group: the half floats d and dmin, the
// 6-bit scales and mins unpacked to a byte each, and per block the values' low 4 bits placed
// as Q4_0x8's nibbles (Q5_Kx8's fifth bits are the caller's to place). q[s][j]: the value of
// column j of sub-block s.
void PlaceKQuantSuperBlock(uint16_t d, uint16_t dmin, const uint8_t* packed_scales,
                           const uint8_t (&q)[8][kQK], int64_t block_bytes, int64_t cols,
                           int64_t sb, int64_t r, uint8_t* group) {
  uint8_t* header = group + sb * kQ4KSuperHeaderBytes;
  PutU16(header + 2 * r, d);
  PutU16(header + 2 * kPackRows + 2 * r, dmin);
  uint8_t scales[8], mins[8];
  internal::UnpackScaleMinK4(packed_scales, scales, mins);
  for (int s = 0; s < 8; ++s) {
    uint8_t* out = group + cols / kQK_K * kQ4KSuperHeaderBytes + (sb * 8 + s) * block_bytes;
    out[r] = scales[s];
    out[kPackRows + r] = mins[s];
    uint8_t* nibbles = out + 2 * kPackRows;
    for (int p = 0; p < 4; ++p) {
      for (int i = 0; i < 4; ++i) {
        nibbles[(p * kPackRows + r) * 4 + i] =
            static_cast<uint8_t>((q[s][4 * p + i] & 0xf) | (q[s][16 + 4 * p + i] & 0xf) << 4);
      }
    }
  }
}

// Super-block `sb` of row `r` of a Q4_Kx8 group from one Q4_K block, bit for bit (sub-blocks
// 2c and 2c + 1 are the low and high nibbles of qs[32c .. 32c + 31]).
void PackQ4KSuperBlock(const uint8_t* src_block, int64_t cols, int64_t sb, int64_t r,
                       uint8_t* group) {
  BlockQ4_K block;
  std::memcpy(&block, src_block, sizeof(block));
  uint8_t q[8][kQK];
  for (int s = 0; s < 8; ++s) {
    const uint8_t* qs = block.qs + 32 * (s / 2);
    for (int j = 0; j < kQK; ++j) q[s][j] = s % 2 == 0 ? qs[j] & 0xf : qs[j] >> 4;
  }
  PlaceKQuantSuperBlock(block.d, block.dmin, block.scales, q, kQ4GroupBlockBytes, cols, sb, r,
                        group);
}

// Places super-block `sb` of row `r` of a Q6_Kx8 group: d, the int8 scales of the 16-column
// halves, each of the 256 values q's (0..63, column order) low nibble (placed as Q4_0x8's)
// and top two bits (packed_matrix.h).
void PlaceQ6KSuperBlock(uint16_t d, const int8_t* scales, const uint8_t* q, int64_t cols,
                        int64_t sb, int64_t r, uint8_t* group) {
  PutU16(group + sb * kQ6SuperHeaderBytes + 2 * r, d);
  for (int s = 0; s < 8; ++s) {
    uint8_t* out = group + Q6BlockOffset(cols, sb * 8 + s);
    const uint8_t* bq = q + kQK * s;
    out[r] = static_cast<uint8_t>(scales[2 * s]);
    out[kPackRows + r] = static_cast<uint8_t>(scales[2 * s + 1]);
    for (int p = 0; p < 4; ++p) {
      for (int i = 0; i < 4; ++i) {
        out[kQ6LowOffset + (p * kPackRows + r) * 4 + i] =
            static_cast<uint8_t>((bq[4 * p + i] & 0xf) | (bq[16 + 4 * p + i] & 0xf) << 4);
      }
    }
    for (int v = 0; v < 2; ++v) {
      for (int i = 0; i < 4; ++i) {
        int byte = 0;
        for (int j = 0; j < 2; ++j) {
          for (int h = 0; h < 2; ++h)
            byte |= (bq[16 * h + 4 * (2 * v + j) + i] >> 4) << (4 * j + 2 * h);
        }
        out[kQ6HighOffset + 32 * v + 4 * r + i] = static_cast<uint8_t>(byte);
      }
    }
  }
}

// Super-block `sb` of row `r` of a Q6_Kx8 group from one Q6_K block, bit for bit. Q6_K's
// element order: see quantize_k_dequant.cc.
void PackQ6KSuperBlock(const uint8_t* src_block, int64_t cols, int64_t sb, int64_t r,
                       uint8_t* group) {
  BlockQ6_K block;
  std::memcpy(&block, src_block, sizeof(block));
  uint8_t q[kQK_K];
  for (int e = 0; e < kQK_K; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    const int low = (block.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xf;
    const int top = (block.qh[32 * h + l] >> (2 * k)) & 3;
    q[e] = static_cast<uint8_t>(low | top << 4);
  }
  PlaceQ6KSuperBlock(block.d, block.scales, q, cols, sb, r, group);
}

// Super-block `sb` of row `r` of a Q6_Kx8 group from one Q3_K block, exactly: Q3_K's value
// d * (sc - 32) * q3, q3 in [-4, 3] and a 6-bit sc per 16 columns, is Q6_K's d * scale *
// (q - 32) with the same d, scale = sc - 32 and q = q3 + 32, computed in the same float steps
// (quantize_k_dequant.cc): 6.56 bits per weight held without a second rounding, where Q8_0
// would take 8.5 and round again. Q3_K's element order: see quantize_k_dequant.cc.
void PackQ3KSuperBlock(const uint8_t* src_block, int64_t cols, int64_t sb, int64_t r,
                       uint8_t* group) {
  BlockQ3_K block;
  std::memcpy(&block, src_block, sizeof(block));
  int unpacked[16];
  internal::UnpackScalesQ3_K(block.scales, unpacked);
  int8_t scales[16];
  for (int j = 0; j < 16; ++j) scales[j] = static_cast<int8_t>(unpacked[j]);
  uint8_t q[kQK_K];
  for (int e = 0; e < kQK_K; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    const int low = (block.qs[32 * h + l] >> (2 * k)) & 3;
    const int minus = ((block.hmask[l] >> (4 * h + k)) & 1) ? 0 : 4;
    q[e] = static_cast<uint8_t>(low - minus + 32);
  }
  PlaceQ6KSuperBlock(block.d, scales, q, cols, sb, r, group);
}

// Super-block `sb` of row `r` of a Q5_Kx8 group from one Q5_K block, bit for bit: as
// PackQ4KSuperBlock, plus each value's fifth bit (bit s of qh[j] for column j of sub-block s)
// placed in the block's plane of fifth bits (packed_matrix.h).
void PackQ5KSuperBlock(const uint8_t* src_block, int64_t cols, int64_t sb, int64_t r,
                       uint8_t* group) {
  BlockQ5_K block;
  std::memcpy(&block, src_block, sizeof(block));
  uint8_t q[8][kQK];
  for (int s = 0; s < 8; ++s) {
    const uint8_t* qs = block.qs + 32 * (s / 2);
    for (int j = 0; j < kQK; ++j) {
      const int low = s % 2 == 0 ? qs[j] & 0xf : qs[j] >> 4;
      q[s][j] = static_cast<uint8_t>(low | ((block.qh[j] >> s) & 1) << 4);
    }
  }
  PlaceKQuantSuperBlock(block.d, block.dmin, block.scales, q, kQ5GroupBlockBytes, cols, sb, r,
                        group);
  for (int s = 0; s < 8; ++s) {
    uint8_t* plane = group + Q5BlockOffset(cols, sb * 8 + s) + kQ5HighOffset;
    for (int i = 0; i < 4; ++i) {
      int byte = 0;
      for (int p = 0; p < 4; ++p) {
        for (int h = 0; h < 2; ++h) byte |= (q[s][16 * h + 4 * p + i] >> 4) << (2 * p + h);
      }
      plane[4 * r + i] = static_cast<uint8_t>(byte);
    }
  }
}

// The nibble (0..15) of column `j` (0..31) of row `r` in a Q4_Kx8 or Q5_Kx8 block.
int NibbleValue(const uint8_t* block, int64_t r, int j) {
  const int h = j / 16, p = j % 16 / 4, i = j % 4;
  return (block[kQ5LowOffset + (p * kPackRows + r) * 4 + i] >> (4 * h)) & 0xf;
}

// q (0..31) of column `j` (0..31) of row `r` in a Q5_Kx8 block.
int Q5Value(const uint8_t* block, int64_t r, int j) {
  const int h = j / 16, p = j % 16 / 4, i = j % 4;
  const int fifth = (block[kQ5HighOffset + 4 * r + i] >> (2 * p + h)) & 1;
  return NibbleValue(block, r, j) | fifth << 4;
}

// q (0..63) of column `j` (0..31) of row `r` in a Q6_Kx8 block.
int Q6Value(const uint8_t* block, int64_t r, int j) {
  const int h = j / 16, p = j % 16 / 4, i = j % 4;
  const int low = (block[kQ6LowOffset + (p * kPackRows + r) * 4 + i] >> (4 * h)) & 0xf;
  const int top = (block[kQ6HighOffset + 32 * (p / 2) + 4 * r + i] >> (4 * (p % 2) + 2 * h)) & 3;
  return low | top << 4;
}

// The K-quant formats: each is its source type regrouped, one 256-column super-block at a time.
using SuperBlockPacker = void (*)(const uint8_t* src_block, int64_t cols, int64_t sb, int64_t r,
                                  uint8_t* group);

struct KQuantPacking {
  DType source;
  SuperBlockPacker pack_super_block;
};

static_assert(sizeof(BlockQ6_K) >= sizeof(BlockQ5_K) && sizeof(BlockQ6_K) >= sizeof(BlockQ4_K));

// The K-quant packing of `format`, or null for the other formats.
const KQuantPacking* KQuantPackingOf(PackedFormat format) {
  static constexpr KQuantPacking kQ4K{DType::kQ4_K, PackQ4KSuperBlock};
  static constexpr KQuantPacking kQ5K{DType::kQ5_K, PackQ5KSuperBlock};
  static constexpr KQuantPacking kQ6K{DType::kQ6_K, PackQ6KSuperBlock};
  switch (format) {
    case PackedFormat::kQ4_Kx8:
      return &kQ4K;
    case PackedFormat::kQ5_Kx8:
      return &kQ5K;
    case PackedFormat::kQ6_Kx8:
      return &kQ6K;
    default:
      return nullptr;
  }
}

// The super-block packer that regroups rows of `src` into `format` exactly, or null: each
// K-quant format from its own source type, and Q6_Kx8 from Q3_K too.
SuperBlockPacker ExactSuperBlockPacker(PackedFormat format, DType src) {
  if (format == PackedFormat::kQ6_Kx8 && src == DType::kQ3_K) return PackQ3KSuperBlock;
  const KQuantPacking* k_quant = KQuantPackingOf(format);
  return k_quant != nullptr && k_quant->source == src ? k_quant->pack_super_block : nullptr;
}

// kI8x8: row `r` of a group from any dequantizable source, in two passes over slices (the
// row's amax first, then the integers), so that no row-sized buffer is needed.
void PackI8Row(DType src_type, const uint8_t* src_row, int64_t cols, int64_t r, uint8_t* group) {
  const DTypeInfo& info = GetDTypeInfo(src_type);
  float values[kSliceCols];
  auto slice = [&](int64_t start) {
    const int64_t count = std::min(kSliceCols, cols - start);
    const size_t src_offset = static_cast<size_t>(start / info.block_elements) * info.block_bytes;
    DequantizeRow(src_type, src_row + src_offset, values, count);
    return count;
  };
  float amax = 0.0f;
  for (int64_t start = 0; start < cols; start += kSliceCols) {
    const int64_t count = slice(start);
    for (int64_t j = 0; j < count; ++j) amax = std::max(amax, std::fabs(values[j]));
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int8_t* q = reinterpret_cast<int8_t*>(group + kI8x8HeaderBytes);
  int32_t sum = 0;
  for (int64_t start = 0; start < cols; start += kSliceCols) {
    const int64_t count = slice(start);
    for (int64_t j = 0; j < count; ++j) {
      const float v = std::fmin(std::fmax(values[j] * id, -127.0f), 127.0f);
      const int value = static_cast<int>(std::nearbyint(v));
      const int64_t col = start + j;
      q[(col / 4 * kPackRows + r) * 4 + col % 4] = static_cast<int8_t>(value);
      sum += value;
    }
  }
  std::memcpy(group + 4 * r, &d, sizeof(d));
  std::memcpy(group + 4 * kPackRows + 4 * r, &sum, sizeof(sum));
}

// Packs one source row into row `r` (0..7) of the group starting at `group`.
void PackOneRow(PackedFormat format, DType src_type, const uint8_t* src_row, int64_t cols,
                int64_t r, uint8_t* group) {
  const DTypeInfo& info = GetDTypeInfo(src_type);
  if (format == PackedFormat::kI8x8) {
    PackI8Row(src_type, src_row, cols, r, group);
    return;
  }
  // Direct regrouping when the source element or block is the target's.
  if (format == PackedFormat::kQ8_0x8 && src_type == DType::kQ8_0) {
    for (int64_t b = 0; b < cols / kQK; ++b) {
      BlockQ8_0 block;
      std::memcpy(&block, src_row + b * sizeof(BlockQ8_0), sizeof(block));
      PlaceQ8Block(block, r, group + b * kQ8GroupBlockBytes);
    }
    return;
  }
  if (format == PackedFormat::kQ4_0x8 && src_type == DType::kQ4_0) {
    for (int64_t b = 0; b < cols / kQK; ++b) {
      BlockQ4_0 block;
      std::memcpy(&block, src_row + b * sizeof(BlockQ4_0), sizeof(block));
      PlaceQ4Block(block, r, group + b * kQ4GroupBlockBytes);
    }
    return;
  }
  if (const SuperBlockPacker exact = ExactSuperBlockPacker(format, src_type)) {
    for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
      exact(src_row + sb * info.block_bytes, cols, sb, r, group);
    }
    return;
  }
  const KQuantPacking* k_quant = KQuantPackingOf(format);
  if (format == PackedFormat::kF16x8 && src_type == DType::kF16) {
    for (int64_t j = 0; j < cols; ++j) {
      std::memcpy(group + (j * kPackRows + r) * 2, src_row + 2 * j, 2);
    }
    return;
  }
  if (format == PackedFormat::kF32x8 && src_type == DType::kF32) {
    for (int64_t j = 0; j < cols; ++j) {
      std::memcpy(group + (j * kPackRows + r) * 4, src_row + 4 * j, 4);
    }
    return;
  }
  // Otherwise: dequantize a slice to float, then write it in the target format.
  float values[kSliceCols];
  for (int64_t start = 0; start < cols; start += kSliceCols) {
    const int64_t count = std::min(kSliceCols, cols - start);
    const size_t src_offset = static_cast<size_t>(start / info.block_elements) * info.block_bytes;
    DequantizeRow(src_type, src_row + src_offset, values, count);
    switch (format) {
      case PackedFormat::kQ8_0x8:
        for (int64_t j = 0; j < count; j += kQK) {
          BlockQ8_0 block;
          QuantizeRow(DType::kQ8_0, values + j, reinterpret_cast<uint8_t*>(&block), kQK);
          PlaceQ8Block(block, r, group + (start + j) / kQK * kQ8GroupBlockBytes);
        }
        break;
      case PackedFormat::kQ4_0x8:
        for (int64_t j = 0; j < count; j += kQK) {
          BlockQ4_0 block;
          QuantizeRow(DType::kQ4_0, values + j, reinterpret_cast<uint8_t*>(&block), kQK);
          PlaceQ4Block(block, r, group + (start + j) / kQK * kQ4GroupBlockBytes);
        }
        break;
      case PackedFormat::kQ4_Kx8:
      case PackedFormat::kQ5_Kx8:
      case PackedFormat::kQ6_Kx8:
        for (int64_t j = 0; j < count; j += kQK_K) {  // through the K-quant's own quantizer
          uint8_t block[sizeof(BlockQ6_K)];  // the largest of the three (static_assert above)
          QuantizeRow(k_quant->source, values + j, block, kQK_K);
          k_quant->pack_super_block(block, cols, (start + j) / kQK_K, r, group);
        }
        break;
      case PackedFormat::kF16x8:
        for (int64_t j = 0; j < count; ++j) {
          PutU16(group + ((start + j) * kPackRows + r) * 2, F32ToF16(values[j]));
        }
        break;
      case PackedFormat::kF32x8:
        for (int64_t j = 0; j < count; ++j) {
          std::memcpy(group + ((start + j) * kPackRows + r) * 4, &values[j], sizeof(float));
        }
        break;
      case PackedFormat::kI8x8:  // handled above
        break;
    }
  }
}

// Zero weights for a padding row; block formats get a zero scale, which is enough.
void ZeroRow(PackedFormat format, int64_t cols, int64_t r, uint8_t* group) {
  switch (format) {
    case PackedFormat::kQ8_0x8: {
      BlockQ8_0 zero{};
      for (int64_t b = 0; b < cols / kQK; ++b) {
        PlaceQ8Block(zero, r, group + b * kQ8GroupBlockBytes);
      }
      break;
    }
    case PackedFormat::kQ4_0x8: {
      BlockQ4_0 zero{};
      std::memset(zero.qs, 0x88, sizeof(zero.qs));  // nibble 8 is the value 0
      for (int64_t b = 0; b < cols / kQK; ++b) {
        PlaceQ4Block(zero, r, group + b * kQ4GroupBlockBytes);
      }
      break;
    }
    case PackedFormat::kQ4_Kx8: {
      const BlockQ4_K zero{};  // d = dmin = 0: every value is 0
      for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
        PackQ4KSuperBlock(reinterpret_cast<const uint8_t*>(&zero), cols, sb, r, group);
      }
      break;
    }
    case PackedFormat::kQ5_Kx8: {
      const BlockQ5_K zero{};  // d = dmin = 0: every value is 0
      for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
        PackQ5KSuperBlock(reinterpret_cast<const uint8_t*>(&zero), cols, sb, r, group);
      }
      break;
    }
    case PackedFormat::kQ6_Kx8: {
      BlockQ6_K zero{};  // d = 0, and every q 32 (top bits 2): every value is +0
      std::memset(zero.qh, 0xaa, sizeof(zero.qh));
      for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
        PackQ6KSuperBlock(reinterpret_cast<const uint8_t*>(&zero), cols, sb, r, group);
      }
      break;
    }
    case PackedFormat::kF16x8:
      for (int64_t j = 0; j < cols; ++j) PutU16(group + (j * kPackRows + r) * 2, 0);
      break;
    case PackedFormat::kF32x8:
      for (int64_t j = 0; j < cols; ++j) {
        std::memset(group + (j * kPackRows + r) * 4, 0, sizeof(float));
      }
      break;
    case PackedFormat::kI8x8:
      std::memset(group + 4 * r, 0, sizeof(float));
      std::memset(group + 4 * kPackRows + 4 * r, 0, sizeof(int32_t));
      for (int64_t c = 0; c < cols / 4; ++c) {
        std::memset(group + kI8x8HeaderBytes + (c * kPackRows + r) * 4, 0, 4);
      }
      break;
  }
}

}  // namespace

const char* PackedFormatName(PackedFormat format) {
  switch (format) {
    case PackedFormat::kQ8_0x8:
      return "q8_0x8";
    case PackedFormat::kQ4_0x8:
      return "q4_0x8";
    case PackedFormat::kF16x8:
      return "f16x8";
    case PackedFormat::kF32x8:
      return "f32x8";
    case PackedFormat::kI8x8:
      return "i8x8";
    case PackedFormat::kQ4_Kx8:
      return "q4_kx8";
    case PackedFormat::kQ6_Kx8:
      return "q6_kx8";
    case PackedFormat::kQ5_Kx8:
      return "q5_kx8";
  }
  return "?";
}

int64_t PackedColumnMultiple(PackedFormat format) {
  if (format == PackedFormat::kI8x8) return 4;
  if (format == PackedFormat::kQ4_Kx8 || format == PackedFormat::kQ5_Kx8 ||
      format == PackedFormat::kQ6_Kx8) {
    return kQK_K;
  }
  return UsesQuantizedActivations(format) ? kQK : 1;
}

bool CanPack(DType src) { return CanDequantize(src); }

PackedFormat ChoosePackedFormat(DType src) {
  switch (src) {
    case DType::kQ4_0:
      return PackedFormat::kQ4_0x8;
    case DType::kQ4_K:
      return PackedFormat::kQ4_Kx8;
    case DType::kQ5_K:
      return PackedFormat::kQ5_Kx8;
    case DType::kQ3_K:
    case DType::kQ6_K:
      return PackedFormat::kQ6_Kx8;
    case DType::kF16:
      return PackedFormat::kF16x8;
    case DType::kF32:
    case DType::kBF16:
      return PackedFormat::kF32x8;
    default:
      return PackedFormat::kQ8_0x8;
  }
}

size_t PackedGroupBytes(PackedFormat format, int64_t cols) {
  switch (format) {
    case PackedFormat::kQ8_0x8:
      return static_cast<size_t>(cols / kQK * kQ8GroupBlockBytes);
    case PackedFormat::kQ4_0x8:
      return static_cast<size_t>(cols / kQK * kQ4GroupBlockBytes);
    case PackedFormat::kF16x8:
      return static_cast<size_t>(cols * kPackRows * 2);
    case PackedFormat::kF32x8:
      return static_cast<size_t>(cols * kPackRows * 4);
    case PackedFormat::kI8x8:
      return static_cast<size_t>(kI8x8HeaderBytes + cols * kPackRows);
    case PackedFormat::kQ4_Kx8:
      return static_cast<size_t>(cols / kQK_K * kQ4KSuperHeaderBytes +
                                 cols / kQK * kQ4GroupBlockBytes);
    case PackedFormat::kQ5_Kx8:
      return static_cast<size_t>(Q5BlockOffset(cols, cols / kQK));
    case PackedFormat::kQ6_Kx8:
      return static_cast<size_t>(Q6BlockOffset(cols, cols / kQK));
  }
  return 0;
}

size_t PackedMatrixBytes(PackedFormat format, int64_t rows, int64_t cols) {
  const int64_t num_groups = (rows + kPackRows - 1) / kPackRows;
  return static_cast<size_t>(num_groups) * PackedGroupBytes(format, cols);
}

void PackMatrixRows(PackedFormat format, DType src_type, const uint8_t* src, int64_t rows,
                    int64_t cols, int64_t row_begin, int64_t row_end, uint8_t* dst) {
  REPRISE_DCHECK(CanPack(src_type));
  REPRISE_DCHECK(cols % PackedColumnMultiple(format) == 0);
  REPRISE_DCHECK(cols % GetDTypeInfo(src_type).block_elements == 0);
  REPRISE_DCHECK(row_begin % kPackRows == 0 && row_begin <= row_end);
  REPRISE_DCHECK(row_end % kPackRows == 0 || row_end == rows);
  REPRISE_DCHECK(row_end <= rows);
  const size_t src_row_bytes = RowBytes(src_type, cols);
  const size_t group_bytes = PackedGroupBytes(format, cols);
  const int64_t padded_end =
      row_end == rows ? (rows + kPackRows - 1) / kPackRows * kPackRows : row_end;
  for (int64_t row = row_begin; row < padded_end; ++row) {
    uint8_t* group = dst + static_cast<size_t>(row / kPackRows) * group_bytes;
    if (row < rows) {
      PackOneRow(format, src_type, src + static_cast<size_t>(row) * src_row_bytes, cols,
                 row % kPackRows, group);
    } else {
      ZeroRow(format, cols, row % kPackRows, group);
    }
  }
}

void UnpackRow(const PackedMatrix& m, int64_t row, float* dst) {
  REPRISE_DCHECK(row >= 0 && row < m.rows);
  const uint8_t* group = m.group(row / kPackRows);
  const int64_t r = row % kPackRows;
  switch (m.format) {
    case PackedFormat::kQ8_0x8:
      for (int64_t b = 0; b < m.cols / kQK; ++b) {
        const uint8_t* block = group + b * kQ8GroupBlockBytes;
        const float d = F16ToF32(GetU16(block + 2 * r));
        const int8_t* q = reinterpret_cast<const int8_t*>(block + 2 * kPackRows);
        for (int j = 0; j < kQK; ++j) {
          dst[b * kQK + j] = d * static_cast<float>(q[(j / 4 * kPackRows + r) * 4 + j % 4]);
        }
      }
      break;
    case PackedFormat::kQ4_0x8:
      for (int64_t b = 0; b < m.cols / kQK; ++b) {
        const uint8_t* block = group + b * kQ4GroupBlockBytes;
        const float d = F16ToF32(GetU16(block + 2 * r));
        const uint8_t* q = block + 2 * kPackRows;
        for (int j = 0; j < kQK / 2; ++j) {
          const uint8_t byte = q[(j / 4 * kPackRows + r) * 4 + j % 4];
          dst[b * kQK + j] = d * static_cast<float>((byte & 0xf) - 8);
          dst[b * kQK + j + 16] = d * static_cast<float>((byte >> 4) - 8);
        }
      }
      break;
    case PackedFormat::kQ4_Kx8:
    case PackedFormat::kQ5_Kx8: {
      const bool q5 = m.format == PackedFormat::kQ5_Kx8;
      for (int64_t b = 0; b < m.cols / kQK; ++b) {
        const uint8_t* header = group + b / 8 * kQ4KSuperHeaderBytes;
        const uint8_t* block = group + (q5 ? Q5BlockOffset(m.cols, b) : Q4KBlockOffset(m.cols, b));
        // As DequantizeRow: d * scale * q - dmin * min.
        const float d = F16ToF32(GetU16(header + 2 * r)) * static_cast<float>(block[r]);
        const float min = F16ToF32(GetU16(header + 2 * kPackRows + 2 * r)) *
                          static_cast<float>(block[kPackRows + r]);
        for (int j = 0; j < kQK; ++j) {
          const int q = q5 ? Q5Value(block, r, j) : NibbleValue(block, r, j);
          dst[b * kQK + j] = d * static_cast<float>(q) - min;
        }
      }
      break;
    }
    case PackedFormat::kQ6_Kx8:
      for (int64_t b = 0; b < m.cols / kQK; ++b) {
        const uint8_t* block = group + Q6BlockOffset(m.cols, b);
        const float d = F16ToF32(GetU16(group + b / 8 * kQ6SuperHeaderBytes + 2 * r));
        for (int j = 0; j < kQK; ++j) {
          // As DequantizeRow: (d * scale) * (q - 32).
          const float dl =
              d * static_cast<float>(static_cast<int8_t>(block[j / 16 * kPackRows + r]));
          dst[b * kQK + j] = dl * static_cast<float>(Q6Value(block, r, j) - 32);
        }
      }
      break;
    case PackedFormat::kF16x8:
      for (int64_t j = 0; j < m.cols; ++j) {
        dst[j] = F16ToF32(GetU16(group + (j * kPackRows + r) * 2));
      }
      break;
    case PackedFormat::kF32x8:
      for (int64_t j = 0; j < m.cols; ++j) {
        std::memcpy(&dst[j], group + (j * kPackRows + r) * 4, sizeof(float));
      }
      break;
    case PackedFormat::kI8x8: {
      float d;
      std::memcpy(&d, group + 4 * r, sizeof(d));
      const int8_t* q = reinterpret_cast<const int8_t*>(group + kI8x8HeaderBytes);
      for (int64_t j = 0; j < m.cols; ++j) {
        dst[j] = d * static_cast<float>(q[(j / 4 * kPackRows + r) * 4 + j % 4]);
      }
      break;
    }
  }
}

}  // namespace reprise::kernels
