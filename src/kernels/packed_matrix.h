// Packed weight matrices: every weight matrix, packed once at model load into the layout the
// matrix-multiply micro-kernels read (matmul.h).
//
// A weight matrix W has `rows` = N outputs and `cols` = K inputs (GGUF stores it that way:
// row n is the K weights of output n). Packing groups rows by kPackRows = 8: the kernels
// produce 8 outputs per vector register, one per lane, so the 8 rows of a group are
// interleaved. Rows past N in the last group are zero. Formats:
//
//   kQ8_0x8  per group, per 32-column block: 8 half-float scales (the rows' Q8_0 `d`), then
//            256 int8 values as [chunk 0..7][row 0..7][4 values], chunk c = columns 4c..4c+3
//            of the block. 272 bytes per 256 weights, as compact as Q8_0 itself.
//   kQ4_0x8  per group, per block: 8 half-float scales, then 128 bytes as
//            [pair 0..3][row 0..7][4 bytes]; byte i of pair p holds column 4p+i of the block
//            in its low nibble and column 16+4p+i in its high nibble (so the bytes are Q4_0's
//            own, regrouped). The value is d * (nibble - 8). 144 bytes per 256 weights.
//   kQ4_Kx8  Q4_K regrouped bit for bit (value = d * scale * nibble - dmin * min, per 32-column
//            sub-block, d and dmin per 256 columns): per group, K / 256 super-block headers
//            of 8 half-float d then 8 half-float dmin (32 bytes), then per 32-column block 8
//            scales and 8 mins (6-bit, a byte each) and 128 nibble bytes laid out as
//            kQ4_0x8's. K a multiple of 256. 148 bytes per 256 weights (4.625 bits each).
//   kQ6_Kx8  Q6_K regrouped bit for bit (value = d * scale * (q - 32), q 6 bits, an int8 scale
//            per 16 columns, d per 256): per group, K / 256 super-block headers of 8 half-float
//            d (16 bytes), then per 32-column block 16 scales as [half 0..1][row 0..7] (half 0:
//            columns 0..15 of the block), 128 bytes of the q's low 4 bits laid out as
//            kQ4_0x8's nibbles, and 64 bytes of their top 2 bits: byte 4r + i of bytes
//            [32v, 32v + 32) holds, for row r, at bit 4j + 2h the top bits of column
//            16h + 4(2v + j) + i (so vector v serves the nibble byte pairs 2v and 2v + 1).
//            K a multiple of 256. 210 bytes per 256 weights (6.5625 bits, Q6_K's own).
//   kQ5_Kx8  Q5_K regrouped bit for bit (value = d * scale * q - dmin * min, q 5 bits): as
//            kQ4_Kx8 (the same super-block headers; per block 8 scales, 8 mins and the q's
//            low 4 bits as kQ4_0x8's nibbles), then per block 32 bytes of fifth bits: byte
//            4r + i holds, for row r, at bit 2p + h the fifth bit of column 16h + 4p + i (the
//            bits of nibble byte pair p's low (h = 0) and high (h = 1) nibbles). K a multiple
//            of 256. 180 bytes per 256 weights (5.625 bits; Q5_K's 5.5 with its packed scales).
//   kF16x8   per group: [column 0..K-1][row 0..7] half floats.
//   kF32x8   per group: [column 0..K-1][row 0..7] floats.
//   kI8x8    NPU-style per-channel int8 (llm.npu's integer matmul, docs/design.md §9): per group,
//            8 float row scales, 8 int32 row sums (the sum of each row's integers), then
//            K/4 chunks of [row 0..7][4 int8 values], chunk c = columns 4c..4c+3. A row is
//            d * q with one d for the whole row (amax / 127). Its matmul reads activation rows
//            quantized with one static, per-tensor scale (StaticQuantizeRowFn) and accumulates
//            the whole row in int32 before one float rescale per output. 64 + 8K bytes per
//            group. Never chosen by default: packed on request (model/static_int8.h).
//
// Source types map to formats by ChoosePackedFormat: Q8_0, Q4_0, Q4_K, Q5_K and Q6_K are regrouped
// bit for bit, Q3_K goes to kQ6_Kx8 exactly (its d * (sc - 32) * q3 is a Q6_K value with q = q3
// + 32) (model loading sends Q6_K and Q3_K layer matrices to kQ8_0x8 instead where the kernel
// set runs prompts faster that way: KernelSet::q6_k_format, model/packed_weights.h); F16 and F32
// stay; BF16 widens to F32 (exact); every other quantized type (Q4_1, Q5_0, Q5_1, Q2_K) is
// dequantized and requantized to Q8_0 with round-to-nearest, which adds at most half a Q8_0
// step (amax of the 32 values / 254) per weight on top of the source's own quantization error.
// Any dequantizable source can be packed into any format on request (an F16 model into Q8_0,
// for instance; into kQ4_Kx8 / kQ5_Kx8 / kQ6_Kx8 through Q4_K's / Q5_K's / Q6_K's own
// quantizer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace reprise::kernels {

inline constexpr int64_t kPackRows = 8;  // rows per interleaved group

// kI8x8: the bytes before a group's integers (8 float row scales, 8 int32 row sums).
inline constexpr int64_t kI8x8HeaderBytes = kPackRows * 8;

// kQ6_Kx8: a super-block header (8 half-float d), and one 32-column block: 16 scale bytes,
// then the low nibbles at kQ6LowOffset, then the top bits at kQ6HighOffset.
inline constexpr int64_t kQ6SuperHeaderBytes = kPackRows * 2;
inline constexpr int64_t kQ6LowOffset = kPackRows * 2;
inline constexpr int64_t kQ6HighOffset = kQ6LowOffset + kPackRows * 16;
inline constexpr int64_t kQ6GroupBlockBytes = kQ6HighOffset + kPackRows * 8;  // 208

// Where block `b` of a kQ6_Kx8 group of `cols` columns starts.
inline constexpr int64_t Q6BlockOffset(int64_t cols, int64_t b) {
  return cols / 256 * kQ6SuperHeaderBytes + b * kQ6GroupBlockBytes;
}

// kQ5_Kx8: a super-block header (8 half-float d, 8 half-float dmin), and one 32-column block:
// 8 scale and 8 min bytes, the low nibbles at kQ5LowOffset, the fifth bits at kQ5HighOffset.
inline constexpr int64_t kQ5SuperHeaderBytes = kPackRows * 4;
inline constexpr int64_t kQ5LowOffset = kPackRows * 2;
inline constexpr int64_t kQ5HighOffset = kQ5LowOffset + kPackRows * 16;
inline constexpr int64_t kQ5GroupBlockBytes = kQ5HighOffset + kPackRows * 4;  // 176

// Where block `b` of a kQ5_Kx8 group of `cols` columns starts.
inline constexpr int64_t Q5BlockOffset(int64_t cols, int64_t b) {
  return cols / 256 * kQ5SuperHeaderBytes + b * kQ5GroupBlockBytes;
}

enum class PackedFormat : uint8_t {
  kQ8_0x8,
  kQ4_0x8,
  kF16x8,
  kF32x8,
  kI8x8,
  kQ4_Kx8,
  kQ6_Kx8,
  kQ5_Kx8,
};

const char* PackedFormatName(PackedFormat format);

// True for the formats whose matmul reads int8-quantized activations with a scale per block
// (activation_quant.h); kI8x8 reads static int8 rows (UsesStaticInt8Activations); the others
// read float activations.
inline bool UsesQuantizedActivations(PackedFormat format) {
  return format == PackedFormat::kQ8_0x8 || format == PackedFormat::kQ4_0x8 ||
         format == PackedFormat::kQ4_Kx8 || format == PackedFormat::kQ5_Kx8 ||
         format == PackedFormat::kQ6_Kx8;
}

// True for kI8x8: its matmul reads rows of K int8 values quantized with one per-tensor scale
// (MatMulInput::static_scale), no per-block metadata.
inline bool UsesStaticInt8Activations(PackedFormat format) { return format == PackedFormat::kI8x8; }

// Columns must be a multiple of this for `format` (32 for the block formats, 256 for kQ4_Kx8,
// kQ5_Kx8 and kQ6_Kx8, 4 for kI8x8, 1 otherwise).
int64_t PackedColumnMultiple(PackedFormat format);

// The format a weight of type `src` is packed into by default.
// Requires: CanPack(src).
PackedFormat ChoosePackedFormat(DType src);

// True for the source types PackMatrixRows accepts (those DequantizeRow accepts).
bool CanPack(DType src);

// Bytes of one group of kPackRows rows, and of a whole packed matrix.
// Requires: cols a multiple of PackedColumnMultiple(format).
size_t PackedGroupBytes(PackedFormat format, int64_t cols);
size_t PackedMatrixBytes(PackedFormat format, int64_t rows, int64_t cols);

// A packed matrix, borrowed: `data` must outlive the view.
struct PackedMatrix {
  PackedFormat format = PackedFormat::kF32x8;
  int64_t rows = 0;               // N, outputs
  int64_t cols = 0;               // K, inputs
  const uint8_t* data = nullptr;  // PackedMatrixBytes(format, rows, cols) bytes

  int64_t num_groups() const { return (rows + kPackRows - 1) / kPackRows; }
  size_t group_bytes() const { return PackedGroupBytes(format, cols); }
  const uint8_t* group(int64_t g) const { return data + static_cast<size_t>(g) * group_bytes(); }
};

// Packs source rows [row_begin, row_end) of a `rows` x `cols` matrix of type `src_type`
// (GGUF row-major: row r at src + r * RowBytes(src_type, cols)) into `dst`, which holds the
// whole packed matrix. Ranges that cover the last group also zero its padding rows.
// Different ranges write disjoint bytes, so they may be packed in parallel.
// Requires: CanPack(src_type); cols a multiple of PackedColumnMultiple(format) and of the
// source block size; row_begin a multiple of kPackRows; row_end a multiple of kPackRows or
// equal to rows.
void PackMatrixRows(PackedFormat format, DType src_type, const uint8_t* src, int64_t rows,
                    int64_t cols, int64_t row_begin, int64_t row_end, uint8_t* dst);

// dst[0..cols) = row `row` of a packed matrix, as the kernels see it (for tests and for
// the reference paths). Requires: 0 <= row < m.rows.
void UnpackRow(const PackedMatrix& m, int64_t row, float* dst);

}  // namespace reprise::kernels
