// Helpers for the store's tests: deterministic chunks with random KV, and comparisons.
// Header-only; included by *_test.cc files only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/float16.h"
#include "base/random.h"
#include "kv/chunk.h"

namespace reprise::store::test_util {

struct TestShape {
  int num_layers = 2;
  int num_kv_heads = 2;
  int head_dim = 8;
  int num_tokens = 4;
};

// A chunk with Gaussian K/V (unit variance), token ids and positions derived from `seed`.
inline kv::ChunkEntry MakeTestChunk(uint64_t seed, const TestShape& shape, uint64_t fingerprint,
                                    kv::ChunkId parent = kv::kRootChunkId, std::string text = "") {
  Random random(seed);
  kv::ChunkEntry entry;
  entry.tokens.resize(static_cast<size_t>(shape.num_tokens));
  for (int32_t& token : entry.tokens) token = static_cast<int32_t>(random.NextBelow(150000));
  entry.content = kv::HashTokens(fingerprint, entry.tokens);
  entry.parent = parent;
  entry.id = kv::ChainId(parent, entry.content);
  entry.exact = (seed & 1) == 0;
  entry.text = std::move(text);
  auto kv = std::make_shared<kv::ChunkKv>();
  kv->num_layers = shape.num_layers;
  kv->num_kv_heads = shape.num_kv_heads;
  kv->head_dim = shape.head_dim;
  kv->num_tokens = shape.num_tokens;
  kv->Allocate();
  for (uint16_t& x : kv->k) x = F32ToF16(static_cast<float>(random.NextGaussian()));
  for (uint16_t& x : kv->v) x = F32ToF16(static_cast<float>(random.NextGaussian()));
  const int32_t first_position = static_cast<int32_t>(random.NextBelow(4096));
  for (int i = 0; i < shape.num_tokens; ++i)
    kv->positions[static_cast<size_t>(i)] = first_position + i;
  entry.kv = std::move(kv);
  return entry;
}

// Whether two entries carry the same identity, tokens, text and bit-identical KV.
inline bool SameChunk(const kv::ChunkEntry& a, const kv::ChunkEntry& b) {
  if (a.id != b.id || a.parent != b.parent || a.content != b.content || a.exact != b.exact ||
      a.tokens != b.tokens || a.text != b.text || (a.kv == nullptr) != (b.kv == nullptr)) {
    return false;
  }
  if (a.kv == nullptr) return true;
  return a.kv->num_layers == b.kv->num_layers && a.kv->num_kv_heads == b.kv->num_kv_heads &&
         a.kv->head_dim == b.kv->head_dim && a.kv->num_tokens == b.kv->num_tokens &&
         a.kv->k == b.kv->k && a.kv->v == b.kv->v && a.kv->positions == b.kv->positions;
}

}  // namespace reprise::store::test_util
