// The AVX2 matmul kernels over the packed layouts (packed_matrix.h), for two instruction sets:
// AVX2 (matmul_avx2.cc) and AVX-VNNI (matmul_avx_vnni.cc: the same tiles with vpdpbusd on ymm
// for the int8 dot products, as on Intel's client CPUs since Alder Lake, which have no
// AVX-512). Each of those translation units includes this header once, compiled with its own
// flags, and so does matmul_avx512_vnni.cc for the tile plumbing (TileOperands, TileTarget,
// StoreGroup) and the AVX2 kernel of its odd groups; everything here is in an anonymous
// namespace, so no two of them share code.
//
// One vector register holds the 8 outputs of a group of 8 weight rows for one token, so a
// register tile is T tokens x G groups of float accumulators, T <= 4. The tile walks all of
// K; the driver walks tiles over the N range (groups) inside chunks of M sized so that the
// chunk's activations stay in L2 while every group of the range streams past them.
//
// Int8 dot products without VNNI: _mm256_maddubs_epi16 multiplies unsigned by signed bytes
// and adds pairs into int16; _mm256_madd_epi16 with ones adds pairs of those into int32.
//  - Q8_0 (signed weights): maddubs(|a|, sign(w, a)) = a * w per byte, with the sign moved
//    onto the weight. A pair of products reaches 2 * 127 * 127, so each chunk of 4 values
//    goes to int32 right away.
//  - kI8x8 (static per-tensor activations): as Q8_0, but one int32 sum over the whole row.
//  - Q4_0: the nibbles are unsigned (value + 8), so maddubs(nibble, a) needs no sign trick,
//    and a pair is at most 2 * 15 * 127: the 8 chunks of a block add up in int16 without
//    overflow and reach int32 with one madd per block. The +8 is removed with the
//    activation block sum: sum((nib - 8) * a) = sum(nib * a) - 8 * sum(a).
//  - Q4_Kx8: the same nibble products; its min enters in float, as - min * d_a * sum(a).
//  - Q5_Kx8: as Q4_Kx8 with q = nibble + 16 * fifth bit (0..31), set into the split nibbles;
//    a pair is at most 2 * 31 * 127, so a block's 8 chunks go to int32 in two madds of 4.
//  - Q6_Kx8: w = q - 32 in [-32, 31], signed, so maddubs(|w|, sign(a, w)); a pair is at most
//    2 * 32 * 127, so the 4 chunks of a 16-column half add up in int16, and the madd that
//    widens them multiplies by the half's int8 scale on the way (madd with the scales instead
//    of ones): sum over the block of scale * w * a, exact in int32, in two madds per block.
// With VNNI, _mm256_dpbusd_avx_epi32 does the unsigned-by-signed products of 4 bytes and
// their sum into int32 in one instruction: for Q4_0 with the same operands; for Q8_0 the
// weights become unsigned by a +128 bias, removed with the activations' block sums (see
// TileQ8); for Q6_Kx8 the halves' int32 sums are multiplied by their scales with vpmulld.
// The int32 block sums are the same exact integers either way.
// Per block, the exact int32 sum becomes float and is added with one FMA scaled by
// d_weight * d_activation: the same operations, in the same order, as the scalar reference.
#pragma once

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/matmul_scratch.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels {
namespace {

constexpr int64_t kQ8GroupBlockBytes = kPackRows * 2 + kPackRows * kQK;      // 272
constexpr int64_t kQ4GroupBlockBytes = kPackRows * 2 + kPackRows * kQK / 2;  // 144
constexpr int64_t kScaleBytes = kPackRows * 2;
// kQ4_Kx8: K / 256 super-block headers (8 half-float d, 8 half-float dmin) before the blocks,
// which are laid out as kQ4_0x8's, with 8 scale bytes and 8 min bytes as their 16-byte header.
constexpr int64_t kQ4KSuperHeaderBytes = kPackRows * 4;

// The formats whose values are nibbles: Q4_0x8, Q4_Kx8 and Q5_Kx8 (nibbles plus a plane of
// fifth bits after each block's); the K-quants' blocks have the same 16-byte header (scales,
// mins) and the same super-block headers (d, dmin).
enum class Nibbles { kQ4_0, kQ4_K, kQ5_K };

// True for the K-quants: value d * q - min per block, d and min from the super-block header.
constexpr bool IsAffine(Nibbles f) { return f != Nibbles::kQ4_0; }

// Where a group's blocks start (after the super-block headers of the K-quants), and the bytes
// of one block of a group.
template <Nibbles kF>
constexpr int64_t NibbleBlocksOffset(int64_t k) {
  return IsAffine(kF) ? k / kQK_K * kQ4KSuperHeaderBytes : 0;
}
template <Nibbles kF>
constexpr int64_t NibbleBlockBytes() {
  return kF == Nibbles::kQ5_K ? kQ5GroupBlockBytes : kQ4GroupBlockBytes;
}
static_assert(kQ5SuperHeaderBytes == kQ4KSuperHeaderBytes && kQ5LowOffset == kScaleBytes);

// Q5_Kx8: the fifth bits of one nibble vector (nibble byte pair p's low (h = 0) or high
// nibbles: bit 2p + h of `plane`'s bytes) as 0 or 16 in each byte.
// (`bit` is a constant once the callers' loops are unrolled.)
inline __m256i FifthBits(__m256i plane, int bit) {
  const __m256i at4 =
      bit <= 4 ? _mm256_slli_epi16(plane, 4 - bit) : _mm256_srli_epi16(plane, bit - 4);
  return _mm256_and_si256(at4, _mm256_set1_epi8(0x10));
}

// The values of nibble byte pair p of a block whose nibbles start at `nibbles`: columns 4p..
// (lo) and 16 + 4p.. (hi), 8 rows x 4 columns each; for Q5_Kx8 with the fifth bits of
// `plane` (the block's plane, loaded once per block).
template <Nibbles kF>
inline void SplitNibbles(const uint8_t* nibbles, int p, __m256i plane, __m256i& lo, __m256i& hi) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + p * 32));
  lo = _mm256_and_si256(raw, low_mask);
  hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask);
  if constexpr (kF == Nibbles::kQ5_K) {
    lo = _mm256_or_si256(lo, FifthBits(plane, 2 * p));
    hi = _mm256_or_si256(hi, FifthBits(plane, 2 * p + 1));
  }
}

// A Q5_Kx8 block's plane of fifth bits (any vector for the other formats, which ignore it).
template <Nibbles kF>
inline __m256i LoadFifthBits(const uint8_t* block) {
  if constexpr (kF == Nibbles::kQ5_K) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kQ5HighOffset));
  }
  return _mm256_setzero_si256();
}

// The float d and min (value = d * q - min) of the 8 rows of Q4_Kx8 block `b`, exact: a half
// float times a 6-bit integer, as the scalar kernel and DequantizeRow compute them.
inline void Q4KBlockScales(const uint8_t* group, const uint8_t* block, int64_t b, __m256& d,
                           __m256& min) {
  const uint8_t* header = group + b / 8 * kQ4KSuperHeaderBytes;
  const __m256 super_d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(header)));
  const __m256 super_min =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(header + 16)));
  const __m256 scale = _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block))));
  const __m256 min_q = _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 8))));
  d = _mm256_mul_ps(super_d, scale);
  min = _mm256_mul_ps(super_min, min_q);
}

// Activations of one M chunk should fit in L2 next to the weights streaming through.
constexpr int64_t kActivationChunkBytes = 192 * 1024;

constexpr int kMaxTileTokens = 4;

// The tile functions must inline into RunTile so that their accumulator arrays live in
// registers; as separate functions they would go through the stack on every FMA.
#define REPRISE_ALWAYS_INLINE inline __attribute__((always_inline))

// How far ahead of its reads the one-token (decode) kernel prefetches each weight stream.
constexpr int64_t kPrefetchBytes = 2048;

// vpdpbusd on ymm: the AVX-512 VNNI (EVEX) form in a translation unit built for AVX-512 VNNI,
// else the AVX-VNNI (VEX) form. Only instantiated (kVnni) where one of them is enabled.
inline __m256i DpBusd(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, a, b);
#else
  return _mm256_dpbusd_avx_epi32(acc, a, b);
#endif
}

// An empty asm that claims to change `v` in its register: GCC then can neither reassociate
// the additions around it into a tree nor hoist the products ahead of it, which it otherwise
// does and then spills the products and the tile's accumulators to the stack.
template <typename V>
REPRISE_ALWAYS_INLINE void KeepInRegister(V& v) {
  asm("" : "+x"(v));
}

inline __m256i Broadcast4Bytes(const int8_t* p) {
  int32_t value;
  std::memcpy(&value, p, sizeof(value));
  return _mm256_set1_epi32(value);
}

inline float LoadFloat(const uint8_t* p) {
  float value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

inline int32_t LoadInt(const uint8_t* p) {
  int32_t value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

// Where one tile's operands are.
struct TileOperands {
  const uint8_t* groups;  // first group of the tile; group g at groups + g * group_bytes
  int64_t group_bytes;
  const uint8_t* rows;  // first activation row of the tile
  int64_t row_stride;   // bytes between activation rows
  int64_t k;
  float static_scale = 0.0f;  // kI8x8: the activations' per-tensor scale
  // Weights the driver prepared for the tile once per group and M chunk: the Q4_0 nibbles
  // split (UnpackQ4Group) for AVX2 tiles of 2+ tokens; the AVX-512 kernel's group pairs.
  const uint8_t* prepared = nullptr;
  // Q6_Kx8 one-token calls (decode): per 16-column half of the activation row, the term that
  // removes the values' offset of 32 (Q6KHalfSumTerms); null in tiles of a multi-token chunk.
  const int32_t* q6_half_terms = nullptr;
};

// Bytes of one Q4_0 group's split nibbles per 32-column block: 4 byte pairs x (low, high).
constexpr int64_t kQ4NibbleBlockBytes = 4 * 2 * 32;

// Bytes of one Q4_Kx8 / Q5_Kx8 block's float d and min of 8 rows, after a group's split
// nibbles.
constexpr int64_t kQ4KScaleBlockBytes = 2 * 8 * 4;

// Bytes UnpackQ4Group writes for a group of K columns.
template <Nibbles kF>
constexpr int64_t UnpackedQ4GroupBytes(int64_t k) {
  return k / kQK * (kQ4NibbleBlockBytes + (IsAffine(kF) ? kQ4KScaleBlockBytes : 0));
}

// Splits the nibbles of one Q4_0x8, Q4_Kx8 or Q5_Kx8 group (K columns) into bytes, block by
// block: for byte pair p, 32 bytes of low nibbles then 32 of high ones, at (b * 4 + p) * 64
// (Q5_Kx8: the 5-bit values); for the K-quants the blocks' float d and min follow, 64 bytes
// per block. The driver does it once per group and M chunk, so that a tile of several tokens
// reads ready bytes instead of splitting the same nibbles again for every 4 tokens (3 of the
// ~26 vector ops per token and byte pair in the AVX2 kernel; 9 for Q5_Kx8).
template <Nibbles kF>
inline void UnpackQ4Group(const uint8_t* group, int64_t k, uint8_t* dst) {
  const int64_t num_blocks = k / kQK;
  const uint8_t* blocks = group + NibbleBlocksOffset<kF>(k);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block = blocks + b * NibbleBlockBytes<kF>();
    if constexpr (IsAffine(kF)) {
      __m256 d, min;
      Q4KBlockScales(group, block, b, d, min);
      float* scales = reinterpret_cast<float*>(dst + num_blocks * kQ4NibbleBlockBytes +
                                               b * kQ4KScaleBlockBytes);
      _mm256_storeu_ps(scales, d);
      _mm256_storeu_ps(scales + 8, min);
    }
    const __m256i plane = LoadFifthBits<kF>(block);
    uint8_t* out = dst + b * kQ4NibbleBlockBytes;
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      __m256i lo, hi;
      SplitNibbles<kF>(block + kScaleBytes, p, plane, lo, hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * 64), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * 64 + 32), hi);
    }
  }
}

// Q6_Kx8 (packed_matrix.h): the unsigned 6-bit values q (0..63) of half h (columns 16h + 4p..)
// of nibble byte pair p of a block, 8 rows x 4 columns.
inline __m256i Q6KValues(const uint8_t* block, int p, int h) {
  const __m256i raw =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kQ6LowOffset + p * 32));
  const __m256i top_bits =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kQ6HighOffset + p / 2 * 32));
  // Column 16h + 4p + i's top bits are at bit 4 (p % 2) + 2h of its byte; move them to 4-5.
  const int shift = 4 * (p % 2) + 2 * h;
  const __m256i top =
      shift <= 4 ? _mm256_slli_epi16(top_bits, 4 - shift) : _mm256_srli_epi16(top_bits, shift - 4);
  const __m256i low = h == 0 ? raw : _mm256_srli_epi16(raw, 4);
  return _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi8(0x0f)),
                         _mm256_and_si256(top, _mm256_set1_epi8(0x30)));
}

// The signed weights w = q - 32 of Q6KValues, in [-32, 31].
inline __m256i Q6KWeights(const uint8_t* block, int p, int h) {
  return _mm256_sub_epi8(Q6KValues(block, p, h), _mm256_set1_epi8(32));
}

// The int8 scales of half h of a Q6_Kx8 block for the 8 rows: as int32 lanes for vpmulld
// (kVnni), else each in both int16 halves of its lane, for madd.
template <bool kVnni>
inline __m256i Q6KScales(const uint8_t* block, int h) {
  const __m256i s32 = _mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + h * kPackRows)));
  if constexpr (kVnni) return s32;
  return _mm256_or_si256(_mm256_and_si256(s32, _mm256_set1_epi32(0xffff)),
                         _mm256_slli_epi32(s32, 16));
}

// The 8 rows' d of block b of a Q6_Kx8 group.
inline __m256 Q6KBlockD(const uint8_t* group, int64_t b) {
  return _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + b / 8 * kQ6SuperHeaderBytes)));
}

// One Q6_Kx8 block prepared for tiles of several tokens (UnpackQ6Group): the 8 weight vectors
// of Q6KWeights as [h][p], the two scale vectors of Q6KScales, the 8 rows' float d.
constexpr int64_t kQ6PreparedBlockBytes = 8 * 32 + 2 * 32 + 32;

template <bool kVnni>
inline void UnpackQ6Group(const uint8_t* group, int64_t k, uint8_t* dst) {
  for (int64_t b = 0; b < k / kQK; ++b) {
    const uint8_t* block = group + Q6BlockOffset(k, b);
    uint8_t* out = dst + b * kQ6PreparedBlockBytes;
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < 4; ++p) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (h * 4 + p) * 32),
                            Q6KWeights(block, p, h));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 256 + h * 32),
                          Q6KScales<kVnni>(block, h));
    }
    _mm256_storeu_ps(reinterpret_cast<float*>(out + 320), Q6KBlockD(group, b));
  }
}

// Writes 8 outputs of group `group` for one token, clipped to [n_begin, n_end).
inline void StoreGroup(__m256 value, const MatMulOutput& out, int64_t m, int64_t group,
                       int64_t n_begin, int64_t n_end) {
  float* dst = out.data + m * out.stride;
  const int64_t first = group * kPackRows;
  if (first >= n_begin && first + kPackRows <= n_end) {
    if (out.accumulate) value = _mm256_add_ps(value, _mm256_loadu_ps(dst + first));
    _mm256_storeu_ps(dst + first, value);
    return;
  }
  alignas(32) float lanes[kPackRows];
  _mm256_store_ps(lanes, value);
  const int64_t lo = std::max(first, n_begin);
  const int64_t hi = std::min(first + kPackRows, n_end);
  for (int64_t n = lo; n < hi; ++n) {
    dst[n] = out.accumulate ? dst[n] + lanes[n - first] : lanes[n - first];
  }
}

// Where a tile's results go: token rows m.., groups group.., clipped to [n_begin, n_end).
struct TileTarget {
  const MatMulOutput* out;
  int64_t m;
  int64_t group;
  int64_t n_begin;
  int64_t n_end;
};

template <bool kVnni, int T, int G>
REPRISE_ALWAYS_INLINE void TileQ8(const TileOperands& op, const TileTarget& target) {
  __m256 acc[T][G];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[t][g] = _mm256_setzero_ps();
  }
  const int64_t num_blocks = op.k / kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t scales_offset = op.k;
  const int64_t sums_offset = op.k + num_blocks * 4;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block[G];
    __m256 dw[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      block[g] = op.groups + g * op.group_bytes + b * kQ8GroupBlockBytes;
      if constexpr (T == 1) {
        // Decode streams the weights from DRAM once: fetch ahead of the hardware prefetcher.
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 64), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 128), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 192), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 256), _MM_HINT_T0);
      }
      dw[g] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block[g])));
    }
    // VNNI: the weights are made unsigned by adding 128 (w xor 0x80), so the block sum is
    // sum((w + 128) * a) - 128 * sum(a), with sum(a) the activation row's block sum.
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const uint8_t* row = op.rows + t * op.row_stride;
      const int8_t* a = reinterpret_cast<const int8_t*>(row) + b * kQK;
      __m256i isum[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) isum[g] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        const __m256i av = Broadcast4Bytes(a + 4 * c);
        if constexpr (kVnni) {
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) {
            const __m256i biased_w = _mm256_xor_si256(
                _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(block[g] + kScaleBytes + c * 32)),
                bias);
            isum[g] = DpBusd(isum[g], biased_w, av);
          }
        } else {
          const __m256i abs_a = _mm256_abs_epi8(av);
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) {
            const __m256i wv = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(block[g] + kScaleBytes + c * 32));
            const __m256i p = _mm256_maddubs_epi16(abs_a, _mm256_sign_epi8(wv, av));
            isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(p, ones));
          }
        }
      }
      if constexpr (kVnni) {
        const __m256i offset = _mm256_set1_epi32(128 * LoadInt(row + sums_offset + 4 * b));
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) isum[g] = _mm256_sub_epi32(isum[g], offset);
      }
      const __m256 da = _mm256_set1_ps(LoadFloat(row + scales_offset + 4 * b));
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        acc[t][g] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[g]), _mm256_mul_ps(dw[g], da), acc[t][g]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      StoreGroup(acc[t][g], *target.out, target.m + t, target.group + g, target.n_begin,
                 target.n_end);
    }
  }
}

// Q4_0, Q4_Kx8 (value d * nibble - min) and Q5_Kx8 (d * q - min, q 5 bits): the same
// unsigned products; Q4_0 removes its +8 from the int32 sum, the K-quants subtract min * d_a *
// sum(a) with a second FMA per block. Without VNNI a Q5_Kx8 block's 8 int16 products would
// overflow (8 * 2 * 31 * 127 > 32767): its first 4 go to int32 after byte pair 1.
template <bool kVnni, Nibbles kF, int T, int G>
REPRISE_ALWAYS_INLINE void TileQ4(const TileOperands& op, const TileTarget& target) {
  constexpr bool kAffine = IsAffine(kF);
  constexpr bool kSplitSum = kF == Nibbles::kQ5_K && !kVnni;
  const int64_t blocks_offset = NibbleBlocksOffset<kF>(op.k);
  __m256 acc[T][G];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[t][g] = _mm256_setzero_ps();
  }
  const int64_t num_blocks = op.k / kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t scales_offset = op.k;
  const int64_t sums_offset = op.k + num_blocks * 4;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block[G];
    __m256i plane[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      block[g] = op.groups + g * op.group_bytes + blocks_offset + b * NibbleBlockBytes<kF>();
      if constexpr (T == 1) {
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 64), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block[g] + kPrefetchBytes + 128), _MM_HINT_T0);
        plane[g] = LoadFifthBits<kF>(block[g]);
      }
    }
    __m256i sum16[T][G];
    __m256i first_half[T][G];  // kSplitSum: byte pairs 0-1 in int32
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) sum16[t][g] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      __m256i lo[G];
      __m256i hi[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        if constexpr (T > 1) {
          static_assert(G == 1, "split nibbles are of one group");
          const uint8_t* split = op.prepared + b * kQ4NibbleBlockBytes + p * 64;
          lo[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(split));
          hi[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(split + 32));
        } else {
          SplitNibbles<kF>(block[g] + kScaleBytes, p, plane[g], lo[g], hi[g]);
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const int8_t*>(op.rows + t * op.row_stride) + b * kQK;
        const __m256i a_lo = Broadcast4Bytes(a + 4 * p);
        const __m256i a_hi = Broadcast4Bytes(a + 16 + 4 * p);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          if constexpr (kVnni) {  // sum16 holds int32 sums here
            sum16[t][g] = DpBusd(sum16[t][g], lo[g], a_lo);
            sum16[t][g] = DpBusd(sum16[t][g], hi[g], a_hi);
          } else {
            sum16[t][g] = _mm256_add_epi16(sum16[t][g], _mm256_maddubs_epi16(lo[g], a_lo));
            sum16[t][g] = _mm256_add_epi16(sum16[t][g], _mm256_maddubs_epi16(hi[g], a_hi));
            KeepInRegister(sum16[t][g]);
            if constexpr (kSplitSum) {
              if (p == 1) {
                first_half[t][g] = _mm256_madd_epi16(sum16[t][g], ones);
                sum16[t][g] = _mm256_setzero_si256();
              }
            }
          }
        }
      }
    }
    __m256 dw[G];
    __m256 mw[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      if constexpr (kAffine && T > 1) {  // prepared with the split nibbles
        const float* scales = reinterpret_cast<const float*>(
            op.prepared + num_blocks * kQ4NibbleBlockBytes + b * kQ4KScaleBlockBytes);
        dw[g] = _mm256_loadu_ps(scales);
        mw[g] = _mm256_loadu_ps(scales + 8);
      } else if constexpr (kAffine) {
        Q4KBlockScales(op.groups + g * op.group_bytes, block[g], b, dw[g], mw[g]);
      } else {
        dw[g] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block[g])));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const uint8_t* row = op.rows + t * op.row_stride;
      const float da_scalar = LoadFloat(row + scales_offset + 4 * b);
      const int32_t a_sum = LoadInt(row + sums_offset + 4 * b);
      const __m256 da = _mm256_set1_ps(da_scalar);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        __m256i block_sum = kVnni ? sum16[t][g] : _mm256_madd_epi16(sum16[t][g], ones);
        if constexpr (kSplitSum) block_sum = _mm256_add_epi32(first_half[t][g], block_sum);
        if constexpr (kAffine) {
          acc[t][g] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_sum), _mm256_mul_ps(dw[g], da), acc[t][g]);
          acc[t][g] = _mm256_fnmadd_ps(mw[g], _mm256_set1_ps(da_scalar * static_cast<float>(a_sum)),
                                       acc[t][g]);
        } else {
          const __m256i isum = _mm256_sub_epi32(block_sum, _mm256_set1_epi32(8 * a_sum));
          acc[t][g] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw[g], da), acc[t][g]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      StoreGroup(acc[t][g], *target.out, target.m + t, target.group + g, target.n_begin,
                 target.n_end);
    }
  }
}

// Q6_Kx8 with one token (decode), which unpacks the weights as it streams them: the values
// stay unsigned (q in 0..63, no subtraction, vpabsb or vpsignb per chunk) and the offset is
// removed per half with the half's activation sum S: sum((q - 32) a) = sum(q a) - 32 S.
//  - AVX2: a pair of products q * a is at most 2 * 63 * 127, so two chunks add up in int16;
//    each such sum is widened by a madd with the half's scales, and the offset's share,
//    scale * 32 S, is one more madd of the scales with 16 S in both int16 halves of a lane
//    (16 * 16 * 127 fits an int16). The term is (16 S) in both halves.
//  - VNNI: vpdpbusd starts from the term -32 S and adds the 4 chunks' products in int32, then
//    one vpmulld by the scales.
// The block's int32 sum is the same exact integer as TileQ6K's, then the same FMA.
template <bool kVnni>
inline int32_t Q6KHalfSumTerm(int32_t half_sum) {
  if constexpr (kVnni) return -32 * half_sum;
  const uint32_t s16 = static_cast<uint16_t>(static_cast<int16_t>(16 * half_sum));
  return static_cast<int32_t>(s16 | (s16 << 16));
}

// The terms of Q6KHalfSumTerm for the K / 16 halves of one quantized activation row.
template <bool kVnni>
inline void Q6KHalfSumTerms(const int8_t* row, int64_t k, int32_t* terms) {
  for (int64_t half = 0; half < k / 16; ++half) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += row[half * 16 + i];
    terms[half] = Q6KHalfSumTerm<kVnni>(sum);
  }
}

template <bool kVnni>
REPRISE_ALWAYS_INLINE void TileQ6KOneToken(const TileOperands& op, const TileTarget& target) {
  __m256 acc = _mm256_setzero_ps();
  const int64_t num_blocks = op.k / kQK;
  const int8_t* row = reinterpret_cast<const int8_t*>(op.rows);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block = op.groups + Q6BlockOffset(op.k, b);
    _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + 192), _MM_HINT_T0);
    const int8_t* a = row + b * kQK;
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i scales = Q6KScales<kVnni>(block, h);
      const __m256i term = _mm256_set1_epi32(op.q6_half_terms[2 * b + h]);
      __m256i scaled;
      if constexpr (kVnni) {
        __m256i sum = term;
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          sum = DpBusd(sum, Q6KValues(block, p, h), Broadcast4Bytes(a + 16 * h + 4 * p));
        }
        scaled = _mm256_mullo_epi32(sum, scales);
      } else {
        __m256i pair_sum[2];
#pragma GCC unroll 2
        for (int j = 0; j < 2; ++j) {
          const int p = 2 * j;
          pair_sum[j] = _mm256_add_epi16(
              _mm256_maddubs_epi16(Q6KValues(block, p, h), Broadcast4Bytes(a + 16 * h + 4 * p)),
              _mm256_maddubs_epi16(Q6KValues(block, p + 1, h),
                                   Broadcast4Bytes(a + 16 * h + 4 * p + 4)));
        }
        scaled = _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(pair_sum[0], scales),
                                                   _mm256_madd_epi16(pair_sum[1], scales)),
                                  _mm256_madd_epi16(scales, term));
      }
      isum = _mm256_add_epi32(isum, scaled);
    }
    const __m256 da = _mm256_set1_ps(LoadFloat(op.rows + op.k + 4 * b));
    acc =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(Q6KBlockD(op.groups, b), da), acc);
  }
  StoreGroup(acc, *target.out, target.m, target.group, target.n_begin, target.n_end);
}

// Q6_Kx8: per block and half, the products of the half's 4 chunks, then the half's sum times
// its row scales (madd / vpmulld), the two halves added in int32, one FMA by d * d_a. The tiles
// read the weights the driver prepared (UnpackQ6Group) once per group and M chunk; a one-token
// call runs TileQ6KOneToken instead.
// The halves run one after the other so that a tile of 4 tokens holds 4 running sums, not 8.
template <bool kVnni, int T>
REPRISE_ALWAYS_INLINE void TileQ6K(const TileOperands& op, const TileTarget& target) {
  if constexpr (T == 1) {
    if (op.q6_half_terms != nullptr) {
      TileQ6KOneToken<kVnni>(op, target);
      return;
    }
  }
  __m256 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t num_blocks = op.k / kQK;
  const int64_t scales_offset = op.k;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* prepared = op.prepared + b * kQ6PreparedBlockBytes;
    __m256i isum[T];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m256i sum[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) sum[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m256i w =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prepared + (h * 4 + p) * 32));
        const __m256i abs_w = _mm256_abs_epi8(w);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const int8_t* a = reinterpret_cast<const int8_t*>(op.rows + t * op.row_stride) + b * kQK;
          const __m256i signed_a = _mm256_sign_epi8(Broadcast4Bytes(a + 16 * h + 4 * p), w);
          if constexpr (kVnni) {  // int32 sums
            sum[t] = DpBusd(sum[t], abs_w, signed_a);
          } else {
            sum[t] = _mm256_add_epi16(sum[t], _mm256_maddubs_epi16(abs_w, signed_a));
            KeepInRegister(sum[t]);
          }
        }
      }
      const __m256i scales =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prepared + 256 + h * 32));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i scaled =
            kVnni ? _mm256_mullo_epi32(sum[t], scales) : _mm256_madd_epi16(sum[t], scales);
        isum[t] = h == 0 ? scaled : _mm256_add_epi32(isum[t], scaled);
      }
    }
    const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(prepared + 320));
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 da =
          _mm256_set1_ps(LoadFloat(op.rows + t * op.row_stride + scales_offset + 4 * b));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(dw, da), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    StoreGroup(acc[t], *target.out, target.m + t, target.group, target.n_begin, target.n_end);
  }
}

// kI8x8 (the NPU-style path): one int32 accumulator per token and group over the whole row,
// the same chunk products as TileQ8; with VNNI the +128 bias of the activations is removed at
// the end with the rows' int32 sums from the group header. Then one float product per output.
template <bool kVnni, int T, int G>
REPRISE_ALWAYS_INLINE void TileI8(const TileOperands& op, const TileTarget& target) {
  __m256i isum[T][G];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) isum[t][g] = _mm256_setzero_si256();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  const uint8_t* q[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) q[g] = op.groups + g * op.group_bytes + kI8x8HeaderBytes;
  const int64_t num_chunks = op.k / 4;
  auto chunk = [&](int64_t c) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i av =
          Broadcast4Bytes(reinterpret_cast<const int8_t*>(op.rows + t * op.row_stride) + 4 * c);
      if constexpr (kVnni) {
        const __m256i biased_a = _mm256_xor_si256(av, bias);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[g] + c * 32));
          isum[t][g] = DpBusd(isum[t][g], biased_a, wv);
        }
      } else {
        const __m256i abs_a = _mm256_abs_epi8(av);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[g] + c * 32));
          const __m256i p = _mm256_maddubs_epi16(abs_a, _mm256_sign_epi8(wv, av));
          isum[t][g] = _mm256_add_epi32(isum[t][g], _mm256_madd_epi16(p, ones));
        }
      }
    }
  };
  int64_t c = 0;
  for (; c + 8 <= num_chunks; c += 8) {
    if constexpr (T == 1) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        _mm_prefetch(reinterpret_cast<const char*>(q[g] + c * 32 + kPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(q[g] + c * 32 + kPrefetchBytes + 64),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(q[g] + c * 32 + kPrefetchBytes + 128),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(q[g] + c * 32 + kPrefetchBytes + 192),
                     _MM_HINT_T0);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) chunk(c + i);
  }
  for (; c < num_chunks; ++c) chunk(c);
  const __m256 sa = _mm256_set1_ps(op.static_scale);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const uint8_t* header = op.groups + g * op.group_bytes;
    const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(header)), sa);
    __m256i bias_sum = _mm256_setzero_si256();
    if constexpr (kVnni) {
      bias_sum = _mm256_slli_epi32(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(header + 4 * kPackRows)), 7);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      __m256i total = isum[t][g];
      if constexpr (kVnni) total = _mm256_sub_epi32(total, bias_sum);
      StoreGroup(_mm256_mul_ps(_mm256_cvtepi32_ps(total), scale), *target.out, target.m + t,
                 target.group + g, target.n_begin, target.n_end);
    }
  }
}

template <int T, int G>
REPRISE_ALWAYS_INLINE void TileF32(const TileOperands& op, const TileTarget& target) {
  __m256 acc[T][G];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[t][g] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < op.k; ++k) {
    __m256 w[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      w[g] = _mm256_loadu_ps(reinterpret_cast<const float*>(op.groups + g * op.group_bytes) +
                             k * kPackRows);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 a =
          _mm256_broadcast_ss(reinterpret_cast<const float*>(op.rows + t * op.row_stride) + k);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[t][g] = _mm256_fmadd_ps(w[g], a, acc[t][g]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      StoreGroup(acc[t][g], *target.out, target.m + t, target.group + g, target.n_begin,
                 target.n_end);
    }
  }
}

template <int T, int G>
REPRISE_ALWAYS_INLINE void TileF16(const TileOperands& op, const TileTarget& target) {
  __m256 acc[T][G];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[t][g] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < op.k; ++k) {
    __m256 w[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      w[g] = _mm256_cvtph_ps(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(op.groups + g * op.group_bytes + k * kPackRows * 2)));
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 a =
          _mm256_broadcast_ss(reinterpret_cast<const float*>(op.rows + t * op.row_stride) + k);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[t][g] = _mm256_fmadd_ps(w[g], a, acc[t][g]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      StoreGroup(acc[t][g], *target.out, target.m + t, target.group + g, target.n_begin,
                 target.n_end);
    }
  }
}

// kQ8Vnni / kQ4Vnni / kQ4KVnni / kQ5KVnni / kQ6KVnni: the block formats with vpdpbusd (only
// in a TU built with -mavxvnni); kQ4K: kQ4_Kx8; kQ5K: kQ5_Kx8; kQ6K: kQ6_Kx8.
enum class Kind {
  kQ8,
  kQ4,
  kQ4K,
  kQ5K,
  kQ6K,
  kQ8Vnni,
  kQ4Vnni,
  kQ4KVnni,
  kQ5KVnni,
  kQ6KVnni,
  kI8,
  kI8Vnni,
  kF32,
  kF16
};

// The kinds whose tiles read split nibbles (UnpackQ4Group) and are one group wide.
constexpr bool IsNibbleKind(Kind kind) {
  return kind == Kind::kQ4 || kind == Kind::kQ4Vnni || kind == Kind::kQ4K ||
         kind == Kind::kQ4KVnni || kind == Kind::kQ5K || kind == Kind::kQ5KVnni;
}

// The nibble format of a nibble kind.
constexpr Nibbles NibblesOf(Kind kind) {
  if (kind == Kind::kQ4K || kind == Kind::kQ4KVnni) return Nibbles::kQ4_K;
  if (kind == Kind::kQ5K || kind == Kind::kQ5KVnni) return Nibbles::kQ5_K;
  return Nibbles::kQ4_0;
}

constexpr bool IsVnniKind(Kind kind) {
  return kind == Kind::kQ8Vnni || kind == Kind::kQ4Vnni || kind == Kind::kQ4KVnni ||
         kind == Kind::kQ5KVnni || kind == Kind::kQ6KVnni || kind == Kind::kI8Vnni;
}

constexpr bool IsQ6KKind(Kind kind) { return kind == Kind::kQ6K || kind == Kind::kQ6KVnni; }

// The kinds whose tiles of 2+ tokens read weights the driver prepared per group and M chunk.
constexpr bool IsPreparedKind(Kind kind) { return IsNibbleKind(kind) || IsQ6KKind(kind); }

// Bytes the driver prepares per group of K columns for kind `kind`.
template <Kind kKind>
constexpr int64_t PreparedGroupBytes(int64_t k) {
  if constexpr (IsQ6KKind(kKind)) return k / kQK * kQ6PreparedBlockBytes;
  return UnpackedQ4GroupBytes<NibblesOf(kKind)>(k);
}

// Prepares one group for kind `kind`'s tiles of 2+ tokens (UnpackQ4Group / UnpackQ6Group).
template <Kind kKind>
inline void PrepareGroup(const uint8_t* group, int64_t k, uint8_t* dst) {
  if constexpr (IsQ6KKind(kKind)) {
    UnpackQ6Group<kKind == Kind::kQ6KVnni>(group, k, dst);
  } else {
    UnpackQ4Group<NibblesOf(kKind)>(group, k, dst);
  }
}

constexpr bool IsBlockKind(Kind kind) { return kind != Kind::kF32 && kind != Kind::kF16; }

template <Kind kKind, int T, int G>
__attribute__((noinline)) void RunTile(const TileOperands& op, const MatMulOutput& out, int64_t m,
                                       int64_t group, int64_t n_begin, int64_t n_end) {
  const TileTarget target{&out, m, group, n_begin, n_end};
  if constexpr (kKind == Kind::kQ8 || kKind == Kind::kQ8Vnni) {
    TileQ8<kKind == Kind::kQ8Vnni, T, G>(op, target);
  } else if constexpr (IsNibbleKind(kKind)) {
    TileQ4<IsVnniKind(kKind), NibblesOf(kKind), T, G>(op, target);
  } else if constexpr (IsQ6KKind(kKind)) {
    static_assert(G == 1, "the Q6_Kx8 tiles are one group wide");
    TileQ6K<kKind == Kind::kQ6KVnni, T>(op, target);
  } else if constexpr (kKind == Kind::kI8 || kKind == Kind::kI8Vnni) {
    TileI8<kKind == Kind::kI8Vnni, T, G>(op, target);
  } else if constexpr (kKind == Kind::kF32) {
    TileF32<T, G>(op, target);
  } else {
    TileF16<T, G>(op, target);
  }
}

// Tiles of T tokens over a group range, G groups at a time, then the remainder one by one.
template <Kind kKind, int T, int G>
void RunGroupRange(TileOperands op, const MatMulOutput& out, int64_t m, int64_t group_begin,
                   int64_t group_end, int64_t n_begin, int64_t n_end, const uint8_t* w_data) {
  int64_t group = group_begin;
  for (; group + G <= group_end; group += G) {
    op.groups = w_data + group * op.group_bytes;
    RunTile<kKind, T, G>(op, out, m, group, n_begin, n_end);
  }
  for (; group < group_end; ++group) {
    op.groups = w_data + group * op.group_bytes;
    RunTile<kKind, T, 1>(op, out, m, group, n_begin, n_end);
  }
}

// One tile of `tokens` (1..4) tokens by G groups.
template <Kind kKind, int G>
void RunTokens(const TileOperands& op, int64_t tokens, const MatMulOutput& out, int64_t m,
               int64_t group, int64_t n_begin, int64_t n_end) {
  switch (tokens) {
    case 4:
      RunTile<kKind, 4, G>(op, out, m, group, n_begin, n_end);
      break;
    case 3:
      RunTile<kKind, 3, G>(op, out, m, group, n_begin, n_end);
      break;
    case 2:
      RunTile<kKind, 2, G>(op, out, m, group, n_begin, n_end);
      break;
    default:
      RunTile<kKind, 1, G>(op, out, m, group, n_begin, n_end);
      break;
  }
}

// The driver: M chunks that fit L2; inside a chunk, groups outer, token tiles inner, so a
// tile's weights (a few KB per group) stay in L1 across the chunk's tokens.
template <Kind kKind, int G>
void MatMulKind(const PackedMatrix& w, const uint8_t* rows, int64_t row_stride, int64_t row_bytes,
                const MatMulOutput& out, int64_t m_begin, int64_t m_end, int64_t n_begin,
                int64_t n_end, float static_scale = 0.0f) {
  const int64_t group_begin = n_begin / kPackRows;
  const int64_t group_end = (n_end + kPackRows - 1) / kPackRows;
  TileOperands op{nullptr,     static_cast<int64_t>(w.group_bytes()), nullptr, row_stride, w.cols,
                  static_scale};
  const int64_t chunk =
      std::max<int64_t>(kMaxTileTokens, kActivationChunkBytes / std::max<int64_t>(row_bytes, 1) /
                                            kMaxTileTokens * kMaxTileTokens);
  // Q4_0 / Q4_Kx8 / Q5_Kx8 / Q6_Kx8 with 2+ tokens: one group's prepared weights (split
  // nibbles, unpacked 6-bit values); Q6_Kx8 with one token: the row's half sum terms
  // (Q6KHalfSumTerms).
  uint8_t* prepared = nullptr;
  if constexpr (IsPreparedKind(kKind)) {
    prepared =
        ThreadMatMulScratch(MatMulScratch::kPreparedWeights,
                            std::max<int64_t>(PreparedGroupBytes<kKind>(w.cols),
                                              w.cols / 16 * static_cast<int64_t>(sizeof(int32_t))));
  }
  for (int64_t m0 = m_begin; m0 < m_end; m0 += chunk) {
    const int64_t m1 = std::min(m_end, m0 + chunk);
    if (m1 - m0 == 1) {
      // Decode: one token streams every weight once, best as one sequential stream per
      // thread (one group at a time) for the block formats, whose per-block integer work
      // hides the FMA latency; the float formats need 4 groups (4 FMA chains) for that.
      op.rows = rows + m0 * row_stride;
      if constexpr (IsQ6KKind(kKind)) {
        int32_t* terms = reinterpret_cast<int32_t*>(prepared);
        Q6KHalfSumTerms<kKind == Kind::kQ6KVnni>(reinterpret_cast<const int8_t*>(op.rows), w.cols,
                                                 terms);
        op.q6_half_terms = terms;
      }
      constexpr int kDecodeGroups = IsBlockKind(kKind) ? 1 : 4;
      RunGroupRange<kKind, 1, kDecodeGroups>(op, out, m0, group_begin, group_end, n_begin, n_end,
                                             w.data);
      op.q6_half_terms = nullptr;
      continue;
    }
    int64_t group = group_begin;
    for (; group < group_end; group += G) {
      const int64_t num_groups = std::min<int64_t>(G, group_end - group);
      op.groups = w.data + group * op.group_bytes;
      if constexpr (IsPreparedKind(kKind)) {
        static_assert(G == 1, "the 4- and 6-bit tiles are one group wide");
        PrepareGroup<kKind>(op.groups, w.cols, prepared);
        op.prepared = prepared;
      }
      for (int64_t m = m0; m < m1; m += kMaxTileTokens) {
        op.rows = rows + m * row_stride;
        const int64_t tokens = std::min<int64_t>(kMaxTileTokens, m1 - m);
        if (num_groups == G) {
          RunTokens<kKind, G>(op, tokens, out, m, group, n_begin, n_end);
        } else {
          RunTokens<kKind, 1>(op, tokens, out, m, group, n_begin, n_end);
          for (int64_t extra = 1; extra < num_groups; ++extra) {
            TileOperands next = op;
            next.groups = op.groups + extra * op.group_bytes;
            RunTokens<kKind, 1>(next, tokens, out, m, group + extra, n_begin, n_end);
          }
        }
      }
    }
  }
}

// The whole matmul (the KernelSet::matmul contract); kVnni picks the block kinds' dot product.
template <bool kVnni>
void MatMulAvx2(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out,
                int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) {
  REPRISE_DCHECK(0 <= m_begin && m_begin <= m_end);
  REPRISE_DCHECK(0 <= n_begin && n_begin <= n_end && n_end <= w.rows);
  if (m_begin == m_end || n_begin == n_end) return;
  switch (w.format) {
    case PackedFormat::kQ8_0x8:
      MatMulKind<kVnni ? Kind::kQ8Vnni : Kind::kQ8, 2>(
          w, x.q8, x.q8_stride, QuantizedRowBytes(w.cols), out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kQ4_0x8:
      MatMulKind<kVnni ? Kind::kQ4Vnni : Kind::kQ4, 1>(
          w, x.q8, x.q8_stride, QuantizedRowBytes(w.cols), out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kQ4_Kx8:
      MatMulKind<kVnni ? Kind::kQ4KVnni : Kind::kQ4K, 1>(
          w, x.q8, x.q8_stride, QuantizedRowBytes(w.cols), out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kQ5_Kx8:
      MatMulKind<kVnni ? Kind::kQ5KVnni : Kind::kQ5K, 1>(
          w, x.q8, x.q8_stride, QuantizedRowBytes(w.cols), out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kQ6_Kx8:
      MatMulKind<kVnni ? Kind::kQ6KVnni : Kind::kQ6K, 1>(
          w, x.q8, x.q8_stride, QuantizedRowBytes(w.cols), out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kI8x8:
      MatMulKind<kVnni ? Kind::kI8Vnni : Kind::kI8, 2>(w, x.q8, x.q8_stride, w.cols, out, m_begin,
                                                       m_end, n_begin, n_end, x.static_scale);
      break;
    case PackedFormat::kF32x8:
      MatMulKind<Kind::kF32, 3>(w, reinterpret_cast<const uint8_t*>(x.f32), x.f32_stride * 4,
                                w.cols * 4, out, m_begin, m_end, n_begin, n_end);
      break;
    case PackedFormat::kF16x8:
      MatMulKind<Kind::kF16, 3>(w, reinterpret_cast<const uint8_t*>(x.f32), x.f32_stride * 4,
                                w.cols * 4, out, m_begin, m_end, n_begin, n_end);
      break;
  }
}

}  // namespace
}  // namespace reprise::kernels
