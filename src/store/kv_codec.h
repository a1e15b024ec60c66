// KV codecs: how a chunk's K and V tensors are encoded in its flash file (docs/design.md §6).
//
//  - kF16: the f16 values as they are; decode(encode(x)) is bit exact.
//  - kInt8Hadamard: each row of head_dim values (one layer, KV head and token; K after RoPE,
//    and V) is multiplied by the normalised Walsh-Hadamard matrix H/sqrt(d), which spreads
//    outlier channels over the whole row, then quantized to int8 with one f32 scale per row
//    (scale = amax/127, round to nearest). Decoding dequantizes and applies the same
//    transform again (it is its own inverse). Needs head_dim to be a power of two; for other
//    shapes EffectiveKvCodec falls back to kF16. Non-finite inputs are not representable:
//    NaN encodes as 0 and ±inf as ±65504.
//
// Encoded tensor layout, for `num_rows` = num_layers * num_kv_heads * num_tokens rows in the
// ChunkKv order [num_layers][num_kv_heads][num_tokens]:
//  - kF16:          u16 values [num_rows][head_dim], little-endian.
//  - kInt8Hadamard: f32 scales [num_rows] (little-endian), then int8 [num_rows][head_dim].
// Bytes per token (both K and V), e.g. 30 layers, 3 KV heads, head_dim 64: f16 23,040,
// int8 12,240 (EncodedKvBytesPerToken).
//
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/chunk.h"
#include "reprise/types.h"

namespace reprise::store {

// Whether decode(encode(x)) == x bit for bit (kF16). KV kept in a lossy codec is never exact,
// whatever its computation was (kv::ChunkEntry::exact; HoldsExactKv).
inline bool IsLosslessKvCodec(KvCodec codec) { return codec == KvCodec::kF16; }

// Whether KV computed exactly (`computed_exactly`: a full prefill of the chunk's path) and kept
// in `codec` is exact KV: bit for bit what a prefill computes.
inline bool HoldsExactKv(bool computed_exactly, KvCodec codec) {
  return computed_exactly && IsLosslessKvCodec(codec);
}

// Whether `value` names a codec (for values read from files and the catalog).
bool IsKnownKvCodec(uint8_t value);

// The codec used when `requested` is asked for rows of `head_dim` values: kInt8Hadamard
// needs a power-of-two head_dim, anything else is stored as kF16.
KvCodec EffectiveKvCodec(KvCodec requested, int head_dim);

// Bytes of one encoded tensor (K or V) of `num_rows` rows of `head_dim` values, or nullopt on
// overflow. Requires: `codec` is effective for head_dim.
std::optional<uint64_t> EncodedTensorBytes(KvCodec codec, uint64_t num_rows, uint64_t head_dim);

// Bytes of K and V together for one token of a model with this shape.
uint64_t EncodedKvBytesPerToken(KvCodec codec, int num_layers, int num_kv_heads, int head_dim);

// Appends the encoding of `values` (f16 [num_rows][head_dim]) to `out`.
// Requires: codec == EffectiveKvCodec(codec, head_dim); values.size() % head_dim == 0.
void AppendEncodedTensor(KvCodec codec, std::span<const uint16_t> values, int head_dim,
                         std::vector<uint8_t>* out);

// Decodes `encoded` into `values` (f16 [num_rows][head_dim], already sized). Errors: Corrupt
// when the sizes do not match the codec, the codec is unknown or not usable for head_dim, or
// a scale is negative or not finite.
Status DecodeTensor(KvCodec codec, std::span<const uint8_t> encoded, int head_dim,
                    std::span<uint16_t> values);

// Decodes rows of a kInt8Hadamard tensor given apart: `scales` [num_rows], `quants`
// [num_rows][head_dim], into `values` [num_rows][head_dim] (for readers that stream a tensor
// in pieces). Requires: the sizes match, head_dim a power of two. Errors: Corrupt when a scale
// is negative or not finite.
Status DecodeInt8HadamardRows(std::span<const float> scales, std::span<const int8_t> quants,
                              int head_dim, std::span<uint16_t> values);

// A chunk's K and V encoded with the codec actually used.
struct EncodedKv {
  KvCodec codec = KvCodec::kF16;
  std::vector<uint8_t> k;
  std::vector<uint8_t> v;
};

// Requires: kv's shape is set and k/v hold num_layers*num_kv_heads*num_tokens*head_dim values.
EncodedKv EncodeKv(const kv::ChunkKv& kv, KvCodec requested);

// Decodes K and V into `kv`, whose shape must already be set; allocates k, v (positions are
// left as they are). Errors: as DecodeTensor.
Status DecodeKv(const EncodedKv& encoded, kv::ChunkKv* kv);

// In place: row <- (H / sqrt(d)) row, the normalised Walsh-Hadamard transform.
// Requires: row.size() is a power of two.
void NormalizedHadamardTransform(std::span<float> row);

}  // namespace reprise::store
