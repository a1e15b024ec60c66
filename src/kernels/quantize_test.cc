// Dequantization checked block by block against the published block layouts: every block is
// written here byte by byte (known half-float scales, known nibbles, bits and packed
// scales), and every element must come back as exactly the value the layout defines. The
// chosen scales are small powers of two and small integers, so the expected values are
// exact in float whatever the order of the products.

#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "base/float16.h"
#include "base/random.h"

namespace reprise::kernels {
namespace {

using Bytes = std::vector<uint8_t>;

void PutHalf(Bytes& block, size_t offset, float value) {
  const uint16_t bits = F32ToF16(value);
  block[offset] = static_cast<uint8_t>(bits & 0xff);  // little-endian
  block[offset + 1] = static_cast<uint8_t>(bits >> 8);
}

Bytes RandomBytes(Random& rng, size_t size) {
  Bytes bytes(size);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.NextU64());
  return bytes;
}

// Dequantizes `row` placed at byte offset `misalign` of a buffer, so that 16-bit fields sit
// at odd addresses when misalign is 1.
std::vector<float> Dequantize(DType dtype, const Bytes& row, int64_t n, size_t misalign) {
  EXPECT_EQ(row.size(), RowBytes(dtype, n));
  Bytes buffer(row.size() + misalign);
  std::memcpy(buffer.data() + misalign, row.data(), row.size());
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  DequantizeRow(dtype, buffer.data() + misalign, out.data(), n);
  return out;
}

// Builds `num_blocks` blocks with `make_block(block_index)` and checks every element, at
// both alignments, against `expect(block, element)`.
template <typename MakeBlock, typename Expect>
void CheckLayout(DType dtype, int num_blocks, MakeBlock make_block, Expect expect) {
  const int64_t block_elements = GetDTypeInfo(dtype).block_elements;
  std::vector<Bytes> blocks;
  Bytes row;
  for (int i = 0; i < num_blocks; ++i) {
    blocks.push_back(make_block(i));
    ASSERT_EQ(blocks.back().size(), GetDTypeInfo(dtype).block_bytes);
    row.insert(row.end(), blocks.back().begin(), blocks.back().end());
  }
  for (size_t misalign : {0, 1}) {
    const std::vector<float> out = Dequantize(dtype, row, num_blocks * block_elements, misalign);
    for (int i = 0; i < num_blocks; ++i) {
      for (int e = 0; e < block_elements; ++e) {
        ASSERT_EQ(out[static_cast<size_t>(i * block_elements + e)], expect(blocks[i], e))
            << DTypeName(dtype) << " block " << i << " element " << e << " misalign " << misalign;
      }
    }
  }
}

// --- 32-element types -----------------------------------------------------------------

// Element e of a 32-element block: low nibble of qs[e] for e < 16, high nibble of qs[e-16].
int Nibble(const uint8_t* qs, int e) { return e < 16 ? qs[e] & 0xf : qs[e - 16] >> 4; }

TEST(QuantizeLayoutTest, Q4_0) {
  Random rng(40);
  const float d[] = {0.25f, -2.0f, 0.0f};
  CheckLayout(
      DType::kQ4_0, 3,
      [&](int i) {
        Bytes b = RandomBytes(rng, 18);  // d:2, qs:16
        PutHalf(b, 0, d[i]);
        if (i == 0) {
          for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
        }
        return b;
      },
      [&](const Bytes& b, int e) {
        const float scale = F16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
        return static_cast<float>(Nibble(&b[2], e) - 8) * scale;
      });
  // Spelled out for block 0: qs[j] = j | (15 - j) << 4 with d = 0.25.
  Bytes b(18);
  PutHalf(b, 0, 0.25f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> out = Dequantize(DType::kQ4_0, b, 32, 1);
  EXPECT_EQ(out[0], -2.0f);   // (0 - 8) * 0.25
  EXPECT_EQ(out[15], 1.75f);  // (15 - 8) * 0.25
  EXPECT_EQ(out[16], 1.75f);  // high nibble of qs[0] = 15
  EXPECT_EQ(out[31], -2.0f);  // high nibble of qs[15] = 0
}

TEST(QuantizeLayoutTest, Q4_1) {
  Random rng(41);
  CheckLayout(
      DType::kQ4_1, 3,
      [&](int i) {
        Bytes b = RandomBytes(rng, 20);  // d:2, m:2, qs:16
        PutHalf(b, 0, 0.5f * static_cast<float>(i + 1));
        PutHalf(b, 2, -1.0f + static_cast<float>(i));
        return b;
      },
      [&](const Bytes& b, int e) {
        const float d = F16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
        const float m = F16ToF32(static_cast<uint16_t>(b[2] | b[3] << 8));
        return static_cast<float>(Nibble(&b[4], e)) * d + m;
      });
  Bytes b(20);
  PutHalf(b, 0, 0.5f);
  PutHalf(b, 2, -1.0f);
  b[4] = 0x3c;  // element 0: 12, element 16: 3
  const std::vector<float> out = Dequantize(DType::kQ4_1, b, 32, 1);
  EXPECT_EQ(out[0], 5.0f);   // 12 * 0.5 - 1
  EXPECT_EQ(out[16], 0.5f);  // 3 * 0.5 - 1
  EXPECT_EQ(out[1], -1.0f);  // q = 0
}

// Q5: bit e of the little-endian 32-bit qh is the fifth bit of element e.
int Q5Value(const uint8_t* qh, const uint8_t* qs, int e) {
  const int high = (qh[e / 8] >> (e % 8)) & 1;
  return Nibble(qs, e) | (high << 4);
}

TEST(QuantizeLayoutTest, Q5_0) {
  Random rng(50);
  const float d[] = {0.125f, -4.0f};
  CheckLayout(
      DType::kQ5_0, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 22);  // d:2, qh:4, qs:16
        PutHalf(b, 0, d[i]);
        return b;
      },
      [&](const Bytes& b, int e) {
        const float scale = F16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
        return static_cast<float>(Q5Value(&b[2], &b[6], e) - 16) * scale;
      });
  Bytes b(22);
  PutHalf(b, 0, 1.0f);
  b[2 + 2] = 0x01;  // qh bit 16: fifth bit of element 16
  b[6 + 0] = 0xf7;  // element 0 low nibble 7, element 16 high nibble 15
  b[2 + 0] = 0x02;  // qh bit 1: element 1 = 16 + 0
  const std::vector<float> out = Dequantize(DType::kQ5_0, b, 32, 1);
  EXPECT_EQ(out[0], -9.0f);   // 7 - 16
  EXPECT_EQ(out[16], 15.0f);  // 31 - 16
  EXPECT_EQ(out[1], 0.0f);    // 16 - 16
  EXPECT_EQ(out[2], -16.0f);  // 0 - 16
}

TEST(QuantizeLayoutTest, Q5_1) {
  Random rng(51);
  CheckLayout(
      DType::kQ5_1, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 24);  // d:2, m:2, qh:4, qs:16
        PutHalf(b, 0, 0.25f * static_cast<float>(i + 1));
        PutHalf(b, 2, 3.0f - static_cast<float>(5 * i));
        return b;
      },
      [&](const Bytes& b, int e) {
        const float d = F16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
        const float m = F16ToF32(static_cast<uint16_t>(b[2] | b[3] << 8));
        return static_cast<float>(Q5Value(&b[4], &b[8], e)) * d + m;
      });
  Bytes b(24);
  PutHalf(b, 0, 0.5f);
  PutHalf(b, 2, -2.0f);
  b[4 + 3] = 0x80;   // qh bit 31: element 31
  b[8 + 15] = 0xf0;  // element 31 high nibble 15
  const std::vector<float> out = Dequantize(DType::kQ5_1, b, 32, 0);
  EXPECT_EQ(out[31], 13.5f);  // 31 * 0.5 - 2
  EXPECT_EQ(out[15], -2.0f);
}

TEST(QuantizeLayoutTest, Q8_0) {
  Random rng(80);
  const float d[] = {0.5f, -0.0625f, 3.0f};
  CheckLayout(
      DType::kQ8_0, 3,
      [&](int i) {
        Bytes b = RandomBytes(rng, 34);  // d:2, qs:32 int8
        PutHalf(b, 0, d[i]);
        if (i == 0) {
          for (int j = 0; j < 32; ++j)
            b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
        }
        return b;
      },
      [&](const Bytes& b, int e) {
        const float scale = F16ToF32(static_cast<uint16_t>(b[0] | b[1] << 8));
        return static_cast<float>(static_cast<int8_t>(b[2 + e])) * scale;
      });
  Bytes b(34);
  PutHalf(b, 0, 0.5f);
  b[2] = 0x80;  // -128
  b[3] = 0x7f;  // 127
  b[4] = 0xff;  // -1
  const std::vector<float> out = Dequantize(DType::kQ8_0, b, 32, 1);
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[1], 63.5f);
  EXPECT_EQ(out[2], -0.5f);
  EXPECT_EQ(out[3], 0.0f);
}

// --- Plain types ------------------------------------------------------------------------

TEST(QuantizeLayoutTest, PlainTypes) {
  const float values[] = {1.0f, -2.5f, 0.0f, 65504.0f, 5.9604645e-8f, -0.333251953125f};
  Bytes f32(sizeof(values));
  std::memcpy(f32.data(), values, sizeof(values));
  EXPECT_EQ(Dequantize(DType::kF32, f32, 6, 1), std::vector<float>(values, values + 6));
  Bytes f16, bf16;
  for (float v : values) {
    const uint16_t h = F32ToF16(v);
    f16.push_back(static_cast<uint8_t>(h & 0xff));
    f16.push_back(static_cast<uint8_t>(h >> 8));
  }
  EXPECT_EQ(Dequantize(DType::kF16, f16, 6, 1), std::vector<float>(values, values + 6));
  const uint16_t bf_bits[] = {0x3f80, 0xc020, 0x0000, 0x7f80, 0x3e80, 0xff7f};
  for (uint16_t h : bf_bits) {
    bf16.push_back(static_cast<uint8_t>(h & 0xff));
    bf16.push_back(static_cast<uint8_t>(h >> 8));
  }
  const std::vector<float> out = Dequantize(DType::kBF16, bf16, 6, 1);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[4], 0.25f);
  EXPECT_EQ(out[5], -0x1.fep127f);  // largest finite bf16, negated
}

// --- K-quants -------------------------------------------------------------------------

float HalfAt(const Bytes& b, size_t offset) {
  return F16ToF32(static_cast<uint16_t>(b[offset] | b[offset + 1] << 8));
}

// Q2_K / Q3_K: element e has 2 bits at shift 2 * ((e % 128) / 32) of qs[32 * (e / 128) + e % 32].
int TwoBits(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

TEST(QuantizeLayoutTest, Q2_K) {
  // scales:16 (scale | min << 4), qs:64, d:2, dmin:2.
  Random rng(2);
  CheckLayout(
      DType::kQ2_K, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 84);
        if (i == 0) {
          for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>((15 - j) | (j << 4));
        }
        PutHalf(b, 80, i == 0 ? 0.5f : -1.0f);
        PutHalf(b, 82, i == 0 ? 0.25f : 2.0f);
        return b;
      },
      [&](const Bytes& b, int e) {
        const int sc = b[e / 16] & 0xf, m = b[e / 16] >> 4;
        return HalfAt(b, 80) * static_cast<float>(sc * TwoBits(&b[16], e)) -
               HalfAt(b, 82) * static_cast<float>(m);
      });
  Bytes b(84);
  for (int j = 0; j < 16; ++j) b[j] = 0x01;  // scale 1, min 0
  PutHalf(b, 80, 1.0f);
  b[16 + 0] = 0xe4;   // 0b11'10'01'00: elements 0, 32, 64, 96 = 0, 1, 2, 3
  b[16 + 49] = 0x1b;  // 0b00'01'10'11: elements 145, 177, 209, 241 = 3, 2, 1, 0
  const std::vector<float> out = Dequantize(DType::kQ2_K, b, 256, 1);
  EXPECT_EQ((std::vector<float>{out[0], out[32], out[64], out[96]}),
            (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ((std::vector<float>{out[145], out[177], out[209], out[241]}),
            (std::vector<float>{3, 2, 1, 0}));
}

TEST(QuantizeLayoutTest, Q3_K) {
  // hmask:32, qs:64, scales:12 (sixteen 6-bit values, stored + 32), d:2.
  Random rng(3);
  int stored[2][16];
  CheckLayout(
      DType::kQ3_K, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 110);
        for (int j = 0; j < 12; ++j) b[96 + j] = 0;
        for (int j = 0; j < 16; ++j) {
          const int s = (j * 37 + 5 + 11 * i) % 64;  // 16 distinct values using all 6 bits
          stored[i][j] = s;
          b[96 + j % 8] |= static_cast<uint8_t>((s & 0xf) << (4 * (j / 8)));
          b[96 + 8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
        }
        PutHalf(b, 108, i == 0 ? 0.5f : -2.0f);
        return b;
      },
      [&](const Bytes& b, int e) {
        const int i = HalfAt(b, 108) == 0.5f ? 0 : 1;
        const int high = (b[e % 32] >> (e / 32)) & 1;
        const int q = TwoBits(&b[32], e) - (high ? 0 : 4);
        return HalfAt(b, 108) * static_cast<float>((stored[i][e / 16] - 32) * q);
      });
  Bytes b(110);
  for (int j = 0; j < 8; ++j) b[96 + j] = 0x11;   // low bits of every stored scale: 1
  for (int j = 8; j < 12; ++j) b[96 + j] = 0xaa;  // top bits: 2, so stored 33 -> scale 1
  PutHalf(b, 108, 1.0f);
  b[5] = 0x08;            // hmask[5] bit 3: element 3 * 32 + 5 = 101 has its high bit
  b[32 + 32 + 5] = 0xc0;  // qs[37] bits 6-7 = 3: element 128 + 96 + 5 = 229
  b[5] |= 0x80;           // hmask[5] bit 7: element 229 has its high bit
  const std::vector<float> out = Dequantize(DType::kQ3_K, b, 256, 1);
  EXPECT_EQ(out[0], -4.0f);  // q 0, high bit clear
  EXPECT_EQ(out[101], 0.0f);
  EXPECT_EQ(out[229], 3.0f);
  EXPECT_EQ(out[228], -4.0f);
}

// Q4_K / Q5_K: 8 scales and 8 mins of 6 bits in 12 bytes.
void PutScaleMinK4(Bytes& b, size_t offset, const int* sc, const int* m) {
  for (int j = 0; j < 4; ++j) {
    b[offset + j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    b[offset + 4 + j] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    b[offset + 8 + j] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
  }
}

// Element e of a 256-element Q4_K/Q5_K block: low nibble of qs[32 * (e / 64) + e % 32]
// for e % 64 < 32, high nibble otherwise.
int KNibble(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return e % 64 < 32 ? byte & 0xf : byte >> 4;
}

const int kScales[2][8] = {{10, 17, 24, 31, 38, 45, 52, 59}, {63, 1, 33, 16, 47, 2, 0, 60}};
const int kMins[2][8] = {{63, 55, 47, 39, 31, 23, 15, 7}, {5, 62, 17, 40, 0, 63, 48, 9}};
const float kD[2] = {0.5f, 2.0f};
const float kDMin[2] = {0.25f, -0.5f};

int BlockIndex(const Bytes& b) { return HalfAt(b, 0) == kD[0] ? 0 : 1; }

TEST(QuantizeLayoutTest, Q4_K) {
  // d:2, dmin:2, scales:12, qs:128.
  Random rng(4);
  CheckLayout(
      DType::kQ4_K, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 144);
        PutHalf(b, 0, kD[i]);
        PutHalf(b, 2, kDMin[i]);
        PutScaleMinK4(b, 4, kScales[i], kMins[i]);
        return b;
      },
      [&](const Bytes& b, int e) {
        const int i = BlockIndex(b), j = e / 32;
        return kD[i] * static_cast<float>(kScales[i][j] * KNibble(&b[16], e)) -
               kDMin[i] * static_cast<float>(kMins[i][j]);
      });
  Bytes b(144);
  PutHalf(b, 0, 1.0f);
  PutHalf(b, 2, 1.0f);
  b[4 + 8 + 3] = 0x21;    // sub-block 7: scale low bits 1, min low bits 2
  b[4 + 3] = 0x40;        // scale 7 top bits 1: 17
  b[4 + 7] = 0xc0;        // min 7 top bits 3: 50
  b[16 + 96 + 4] = 0x50;  // element 3 * 64 + 32 + 4 = 228: q 5
  const std::vector<float> out = Dequantize(DType::kQ4_K, b, 256, 1);
  EXPECT_EQ(out[228], 17.0f * 5.0f - 50.0f);
  EXPECT_EQ(out[229], -50.0f);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(QuantizeLayoutTest, Q5_K) {
  // d:2, dmin:2, scales:12, qh:32, qs:128.
  Random rng(5);
  CheckLayout(
      DType::kQ5_K, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 176);
        PutHalf(b, 0, kD[i]);
        PutHalf(b, 2, kDMin[i]);
        PutScaleMinK4(b, 4, kScales[i], kMins[i]);
        return b;
      },
      [&](const Bytes& b, int e) {
        const int i = BlockIndex(b), j = e / 32;
        const int q = KNibble(&b[48], e) | (((b[16 + e % 32] >> (e / 32)) & 1) << 4);
        return kD[i] * static_cast<float>(kScales[i][j] * q) -
               kDMin[i] * static_cast<float>(kMins[i][j]);
      });
  Bytes b(176);
  PutHalf(b, 0, 1.0f);
  const int ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, zeros[8] = {};
  PutScaleMinK4(b, 4, ones, zeros);
  b[16 + 9] = 0x24;       // qh[9] bits 2 and 5: elements 2 * 32 + 9 = 73 and 5 * 32 + 9 = 169
  b[48 + 64 + 9] = 0x3f;  // element 128 + 9 = 137: 15, element 169: 3
  const std::vector<float> out = Dequantize(DType::kQ5_K, b, 256, 1);
  EXPECT_EQ(out[73], 16.0f);
  EXPECT_EQ(out[137], 15.0f);
  EXPECT_EQ(out[169], 19.0f);
  EXPECT_EQ(out[9], 0.0f);
}

TEST(QuantizeLayoutTest, Q6_K) {
  // ql:128, qh:64, scales:16 int8, d:2.
  Random rng(6);
  CheckLayout(
      DType::kQ6_K, 2,
      [&](int i) {
        Bytes b = RandomBytes(rng, 210);
        for (int j = 0; j < 16; ++j) {
          b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>((i == 0 ? j : 15 - j) * 17 - 128));
        }
        PutHalf(b, 208, i == 0 ? 0.5f : -0.25f);
        return b;
      },
      [&](const Bytes& b, int e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int low = (b[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xf;
        const int high = (b[128 + 32 * h + l] >> (2 * k)) & 3;
        const int sc = static_cast<int8_t>(b[192 + e / 16]);
        return HalfAt(b, 208) * static_cast<float>(sc * ((low | (high << 4)) - 32));
      });
  Bytes b(210);
  for (int j = 0; j < 16; ++j) b[192 + j] = 1;
  PutHalf(b, 208, 1.0f);
  b[0] = 0x21;            // element 0 low bits 1, element 64 low bits 2
  b[128 + 0] = 0xe4;      // top bits of elements 0, 32, 64, 96: 0, 1, 2, 3
  b[64 + 32 + 7] = 0x9a;  // elements 128 + 32 + 7 = 167 (low 10) and 128 + 96 + 7 = 231 (low 9)
  const std::vector<float> out = Dequantize(DType::kQ6_K, b, 256, 1);
  EXPECT_EQ(out[0], 1.0f - 32.0f);
  EXPECT_EQ(out[32], 16.0f - 32.0f);
  EXPECT_EQ(out[64], 34.0f - 32.0f);
  EXPECT_EQ(out[96], 48.0f - 32.0f);
  EXPECT_EQ(out[167], 10.0f - 32.0f);
  EXPECT_EQ(out[231], 9.0f - 32.0f);
}

// --- API --------------------------------------------------------------------------------

TEST(QuantizeApiTest, SupportedTypesAndRowBytes) {
  for (DType t :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
        DType::kQ5_1, DType::kQ8_0, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_TRUE(CanDequantize(t)) << DTypeName(t);
    EXPECT_TRUE(CanQuantize(t)) << DTypeName(t);
  }
  for (DType t : {DType::kQ2_K}) {
    EXPECT_TRUE(CanDequantize(t)) << DTypeName(t);
    EXPECT_FALSE(CanQuantize(t)) << DTypeName(t);
  }
  for (DType t : {DType::kQ8_1, DType::kQ8_K, DType::kIQ4_NL, DType::kIQ2_XXS, DType::kI32,
                  DType::kF64, DType::kMXFP4, DType::kTQ1_0}) {
    EXPECT_FALSE(CanDequantize(t)) << DTypeName(t);
    EXPECT_FALSE(CanQuantize(t)) << DTypeName(t);
  }
  EXPECT_EQ(RowBytes(DType::kF32, 7), 28u);
  EXPECT_EQ(RowBytes(DType::kF16, 7), 14u);
  EXPECT_EQ(RowBytes(DType::kBF16, 1024), 2048u);
  EXPECT_EQ(RowBytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(RowBytes(DType::kQ8_0, 1024), 32u * 34u);
  EXPECT_EQ(RowBytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(RowBytes(DType::kQ6_K, 4096), 16u * 210u);
  EXPECT_EQ(RowBytes(DType::kQ2_K, 0), 0u);
}

}  // namespace
}  // namespace reprise::kernels
