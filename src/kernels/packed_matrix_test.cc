// Packing of every source type: what the kernels see (UnpackRow) against DequantizeRow of
// the source rows, exactly where the packing is a regrouping or a widening, within the
// requantization bound otherwise; sizes; parallel (row-range) packing; padding rows.

#include "kernels/packed_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "kernels/kernel_test_util.h"
#include "kernels/quantize.h"

namespace reprise::kernels {
namespace {

using testing::Pack;
using testing::RandomMatrix;

std::vector<float> DequantizedRow(DType dtype, const std::vector<uint8_t>& src, int64_t row,
                                  int64_t cols) {
  std::vector<float> out(static_cast<size_t>(cols));
  DequantizeRow(dtype, src.data() + row * RowBytes(dtype, cols), out.data(), cols);
  return out;
}

TEST(PackedMatrixTest, ChoosesFormatsBySourceType) {
  EXPECT_EQ(ChoosePackedFormat(DType::kQ8_0), PackedFormat::kQ8_0x8);
  EXPECT_EQ(ChoosePackedFormat(DType::kQ4_0), PackedFormat::kQ4_0x8);
  EXPECT_EQ(ChoosePackedFormat(DType::kF16), PackedFormat::kF16x8);
  EXPECT_EQ(ChoosePackedFormat(DType::kF32), PackedFormat::kF32x8);
  EXPECT_EQ(ChoosePackedFormat(DType::kBF16), PackedFormat::kF32x8);
  EXPECT_EQ(ChoosePackedFormat(DType::kQ4_K), PackedFormat::kQ4_Kx8);
  EXPECT_EQ(ChoosePackedFormat(DType::kQ5_K), PackedFormat::kQ5_Kx8);
  EXPECT_EQ(ChoosePackedFormat(DType::kQ6_K), PackedFormat::kQ6_Kx8);
  EXPECT_EQ(ChoosePackedFormat(DType::kQ3_K), PackedFormat::kQ6_Kx8);  // exactly
  for (DType dtype : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K}) {
    EXPECT_EQ(ChoosePackedFormat(dtype), PackedFormat::kQ8_0x8) << DTypeName(dtype);
    EXPECT_TRUE(CanPack(dtype));
  }
  EXPECT_FALSE(CanPack(DType::kIQ2_XXS));
}

TEST(PackedMatrixTest, Sizes) {
  // 13 rows are 2 groups of 8.
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ8_0x8, 13, 64), 2u * 2 * 272);
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ4_0x8, 13, 64), 2u * 2 * 144);
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ4_Kx8, 13, 512), 2u * (2 * 32 + 16 * 144));
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ5_Kx8, 13, 512), 2u * (2 * 32 + 16 * 176));
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ6_Kx8, 13, 512), 2u * (2 * 16 + 16 * 208));
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kF16x8, 13, 5), 2u * 5 * 8 * 2);
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kF32x8, 8, 5), 1u * 5 * 8 * 4);
  // Same bytes per weight as the GGUF types they come from.
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ8_0x8, 576, 576), RowBytes(DType::kQ8_0, 576) * 576);
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ4_0x8, 576, 576), RowBytes(DType::kQ4_0, 576) * 576);
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ6_Kx8, 1024, 768),
            RowBytes(DType::kQ6_K, 768) * 1024);
  // Q4_K and Q5_K keep 6-bit scales and mins in a byte each: 4 bytes per 256 weights more.
  EXPECT_EQ(PackedMatrixBytes(PackedFormat::kQ5_Kx8, 1024, 768),
            (RowBytes(DType::kQ5_K, 768) + 3 * 4) * 1024);
}

// Regrouping and widening are exact (the K-quants' values as DequantizeRow computes them,
// bit for bit, from the regrouped half floats, scale (and min) bytes and bits).
TEST(PackedMatrixTest, ExactFormatsRoundTrip) {
  struct Exact {
    DType src;
    PackedFormat format;
  };
  for (const Exact& e :
       {Exact{DType::kQ8_0, PackedFormat::kQ8_0x8}, Exact{DType::kQ4_0, PackedFormat::kQ4_0x8},
        Exact{DType::kQ4_K, PackedFormat::kQ4_Kx8}, Exact{DType::kQ5_K, PackedFormat::kQ5_Kx8},
        Exact{DType::kQ6_K, PackedFormat::kQ6_Kx8}, Exact{DType::kF16, PackedFormat::kF16x8},
        Exact{DType::kF32, PackedFormat::kF32x8}, Exact{DType::kBF16, PackedFormat::kF32x8},
        Exact{DType::kF16, PackedFormat::kF32x8}}) {
    for (int64_t rows : {1, 8, 13, 24}) {
      const int64_t cols = GetDTypeInfo(e.src).block_elements == 256 ? 512 : 96;
      const std::vector<uint8_t> src = RandomMatrix(rows * 7 + 1, e.src, rows, cols);
      const auto packed = Pack(e.format, e.src, src, rows, cols);
      std::vector<float> got(cols);
      for (int64_t r = 0; r < rows; ++r) {
        UnpackRow(packed.view, r, got.data());
        const std::vector<float> want = DequantizedRow(e.src, src, r, cols);
        for (int64_t j = 0; j < cols; ++j) {
          ASSERT_EQ(got[j], want[j]) << DTypeName(e.src) << " -> " << PackedFormatName(e.format)
                                     << " row " << r << " col " << j;
        }
      }
    }
  }
}

// Requantized to Q8_0: per 32-value block, |packed - source| <= d/2 + 127 |d - d16| with
// d = amax / 127 of the source block and d16 its half-float rounding, which is at most
// amax / 127 * (1/2 + 127 * 2^-11) < 0.57 * amax / 127.
TEST(PackedMatrixTest, RequantizedTypesStayWithinHalfAQ8Step) {
  for (DType src_type : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K,
                         DType::kQ6_K, DType::kF16, DType::kF32}) {
    const int64_t rows = 11;
    const int64_t cols = 512;
    const std::vector<uint8_t> src = RandomMatrix(31, src_type, rows, cols);
    const auto packed = Pack(PackedFormat::kQ8_0x8, src_type, src, rows, cols);
    std::vector<float> got(cols);
    for (int64_t r = 0; r < rows; ++r) {
      UnpackRow(packed.view, r, got.data());
      const std::vector<float> want = DequantizedRow(src_type, src, r, cols);
      for (int64_t b = 0; b < cols / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(want[b * 32 + j]));
        const float bound = 0.57f * amax / 127.0f + 1e-7f;
        for (int j = 0; j < 32; ++j) {
          ASSERT_NEAR(got[b * 32 + j], want[b * 32 + j], bound)
              << DTypeName(src_type) << " row " << r << " col " << b * 32 + j;
        }
      }
    }
  }
}

// Into Q4_Kx8 / Q5_Kx8 / Q6_Kx8 from other types: through Q4_K's / Q5_K's / Q6_K's quantizer, so
// the packed values are exactly those of the source quantized to that type and dequantized.
TEST(PackedMatrixTest, OtherTypesReachKQuantFormatsThroughTheirQuantizers) {
  struct Target {
    PackedFormat format;
    DType through;
  };
  for (const Target& target :
       {Target{PackedFormat::kQ4_Kx8, DType::kQ4_K}, Target{PackedFormat::kQ5_Kx8, DType::kQ5_K},
        Target{PackedFormat::kQ6_Kx8, DType::kQ6_K}}) {
    for (DType src_type : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ6_K, DType::kQ4_K}) {
      if (src_type == target.through) continue;
      const int64_t rows = 11;
      const int64_t cols = 512;
      const std::vector<uint8_t> src = RandomMatrix(17, src_type, rows, cols);
      const auto packed = Pack(target.format, src_type, src, rows, cols);
      std::vector<float> got(cols);
      std::vector<uint8_t> quantized(RowBytes(target.through, cols));
      for (int64_t r = 0; r < rows; ++r) {
        UnpackRow(packed.view, r, got.data());
        const std::vector<float> values = DequantizedRow(src_type, src, r, cols);
        QuantizeRow(target.through, values.data(), quantized.data(), cols);
        std::vector<float> want(cols);
        DequantizeRow(target.through, quantized.data(), want.data(), cols);
        for (int64_t j = 0; j < cols; ++j) {
          ASSERT_EQ(got[j], want[j])
              << DTypeName(src_type) << " -> " << PackedFormatName(target.format) << " row " << r
              << " col " << j;
        }
      }
    }
  }
}

// Q2_K and Q3_K (no quantizer here): random block bytes with the scales set to small
// finite halves are valid blocks; they go through the same requantization.
// Random bytes as `rows` x `cols` K-quant blocks of `dtype` (every bit pattern of scales, mins
// and values), with the half-float d at `d_offset` of each block (and dmin right after it) set
// to 0.01, a normal value.
std::vector<uint8_t> RandomKQuantBlocks(uint64_t seed, DType dtype, int64_t rows, int64_t cols,
                                        size_t d_offset, bool has_dmin) {
  Random rng(seed);
  std::vector<uint8_t> src(RowBytes(dtype, cols) * rows);
  for (uint8_t& byte : src) byte = static_cast<uint8_t>(rng.NextU64());
  const size_t block_bytes = GetDTypeInfo(dtype).block_bytes;
  const uint16_t d = F32ToF16(0.01f);
  for (size_t offset = 0; offset < src.size(); offset += block_bytes) {
    std::memcpy(&src[offset + d_offset], &d, 2);
    if (has_dmin) std::memcpy(&src[offset + d_offset + 2], &d, 2);
  }
  return src;
}

// Random bytes as K-quant blocks regroup bit for bit into their own packed formats, and Q3_K
// into Q6_Kx8.
TEST(PackedMatrixTest, RandomKQuantBlocksRegroupExactly) {
  struct Layout {
    DType dtype;
    PackedFormat format;
    size_t d_offset;  // byte offset of the half-float `d` (and `dmin` right after)
    bool has_dmin;
  };
  for (const Layout& l : {Layout{DType::kQ4_K, PackedFormat::kQ4_Kx8, 0, true},
                          Layout{DType::kQ5_K, PackedFormat::kQ5_Kx8, 0, true},
                          Layout{DType::kQ6_K, PackedFormat::kQ6_Kx8, 208, false},
                          Layout{DType::kQ3_K, PackedFormat::kQ6_Kx8, 108, false}}) {
    const int64_t rows = 11;
    const int64_t cols = 768;
    const std::vector<uint8_t> src =
        RandomKQuantBlocks(8, l.dtype, rows, cols, l.d_offset, l.has_dmin);
    const auto packed = Pack(l.format, l.dtype, src, rows, cols);
    std::vector<float> got(cols);
    for (int64_t r = 0; r < rows; ++r) {
      UnpackRow(packed.view, r, got.data());
      const std::vector<float> want = DequantizedRow(l.dtype, src, r, cols);
      for (int64_t j = 0; j < cols; ++j) {
        ASSERT_EQ(got[j], want[j]) << DTypeName(l.dtype) << " row " << r << " col " << j;
      }
    }
  }
}

TEST(PackedMatrixTest, RandomKQuantBlocksRequantize) {
  struct Layout {
    DType dtype;
    size_t d_offset;  // byte offset of the half-float `d` (and `dmin` right after, for Q2_K)
    bool has_dmin;
  };
  for (const Layout& l : {Layout{DType::kQ2_K, 80, true}, Layout{DType::kQ3_K, 108, false}}) {
    const int64_t rows = 9;
    const int64_t cols = 512;
    const std::vector<uint8_t> src =
        RandomKQuantBlocks(5, l.dtype, rows, cols, l.d_offset, l.has_dmin);
    const auto packed = Pack(PackedFormat::kQ8_0x8, l.dtype, src, rows, cols);
    std::vector<float> got(cols);
    for (int64_t r = 0; r < rows; ++r) {
      UnpackRow(packed.view, r, got.data());
      const std::vector<float> want = DequantizedRow(l.dtype, src, r, cols);
      for (int64_t b = 0; b < cols / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(want[b * 32 + j]));
        for (int j = 0; j < 32; ++j) {
          ASSERT_NEAR(got[b * 32 + j], want[b * 32 + j], 0.57f * amax / 127.0f + 1e-7f)
              << DTypeName(l.dtype) << " row " << r << " col " << b * 32 + j;
        }
      }
    }
  }
}

// Packing in row ranges (as threads would) writes every byte, the same bytes as one call,
// whatever was in the buffer before; padding rows of the last group are zeros.
TEST(PackedMatrixTest, RowRangesAndPaddingAreDeterministic) {
  for (PackedFormat format :
       {PackedFormat::kQ8_0x8, PackedFormat::kQ4_0x8, PackedFormat::kQ4_Kx8, PackedFormat::kQ5_Kx8,
        PackedFormat::kQ6_Kx8, PackedFormat::kF16x8, PackedFormat::kF32x8}) {
    const int64_t rows = 29;
    const int64_t cols = PackedColumnMultiple(format) == 256 ? 256 : 64;
    const std::vector<uint8_t> src = RandomMatrix(3, DType::kF32, rows, cols);
    const size_t bytes = PackedMatrixBytes(format, rows, cols);
    std::vector<uint8_t> whole(bytes, 0x00);
    PackMatrixRows(format, DType::kF32, src.data(), rows, cols, 0, rows, whole.data());
    std::vector<uint8_t> ranges(bytes, 0xff);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{16, 24}, {0, 16}, {24, 29}}) {
      PackMatrixRows(format, DType::kF32, src.data(), rows, cols, begin, end, ranges.data());
    }
    EXPECT_EQ(ranges, whole) << PackedFormatName(format);
    // The padding rows act as zero weights.
    const PackedMatrix padded{format, 32, cols, whole.data()};
    std::vector<float> row(cols);
    for (int64_t r = rows; r < 32; ++r) {
      UnpackRow(padded, r, row.data());
      for (float v : row) ASSERT_EQ(v, 0.0f) << PackedFormatName(format) << " row " << r;
    }
  }
}

}  // namespace
}  // namespace reprise::kernels
