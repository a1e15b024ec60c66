// Chunks: the unit of KV storage and reuse (docs/design.md §1, §6).
//
// A chunk is up to 512 tokens of one segment. Two identities:
//  - its content hash: 64-bit hash of (model fingerprint, token ids). The same text gives the
//    same hash wherever it appears, so a chunk is found for non-prefix reuse in any prompt;
//  - its prefix-tree id: ChainId(parent id, content hash), the node of the chunk computed
//    right after the chunks on the path from the root. Its KV is exact for prefix reuse only
//    when every chunk before it was computed exactly in that same order (`exact`).
// ChunkKv holds a chunk's K and V for every layer, f16, K after RoPE at `positions`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_buffer.h"

namespace reprise::kv {

using ContentHash = uint64_t;
using ChunkId = uint64_t;
inline constexpr ChunkId kRootChunkId = 0;

// XXH3-64 of the fingerprint and the token ids. Never 0.
ContentHash HashTokens(uint64_t model_fingerprint, std::span<const int32_t> tokens);

// The prefix-tree id of a chunk with `content` whose parent node is `parent`. Never 0.
ChunkId ChainId(ChunkId parent, ContentHash content);

struct ChunkKv {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int num_tokens = 0;
  KvBuffer k;  // f16 [num_layers][num_kv_heads][num_tokens][head_dim], after RoPE
  KvBuffer v;  // f16 [num_layers][num_kv_heads][num_tokens][head_dim]
  std::vector<int32_t> positions;  // [num_tokens] the positions K was rotated for

  // Requires: shape set. Allocates k, v and positions, zeroed.
  void Allocate();
  size_t bytes() const { return (k.size() + v.size()) * sizeof(uint16_t) + positions.size() * 4; }
  size_t row_offset(int layer, int head, int token) const {
    return ((static_cast<size_t>(layer) * num_kv_heads + head) * num_tokens + token) * head_dim;
  }
};

// Where an entry sits in the prefix tree, without its tokens or KV.
struct ChunkLink {
  ChunkId parent = kRootChunkId;
  ContentHash content = 0;
};

// How a chunk's own KV was made, recorded with it.
enum class KvOrigin : uint8_t {
  kUnknown = 0,   // stored before provenance was recorded
  kComputed = 1,  // every token of the chunk ran through the model (a prefill)
  kBlended = 2,   // reused from another position: `recompute_ratio` of the reused tokens'
                  // budget recomputed, selected at `check_layer` (r = 0: kept as they were)
};
inline constexpr uint8_t kMaxKvOrigin = 2;

struct KvProvenance {
  KvOrigin origin = KvOrigin::kUnknown;
  float recompute_ratio = 0.0f;  // kBlended: r in [0, 1]
  int32_t check_layer = -1;      // kBlended with r > 0: the selection's layer; else -1
  bool operator==(const KvProvenance&) const = default;
};

// "computed", "blended r=0.25 @layer 1", "reused as is", "unknown".
std::string DescribeProvenance(const KvProvenance& provenance);

struct ChunkEntry {
  ChunkId id = 0;  // prefix-tree node
  ChunkId parent = kRootChunkId;
  ContentHash content = 0;
  // KV equals a full prefill of the path from the root. A kComputed chunk is inexact when
  // a blended chunk came before it; a kBlended one never is exact.
  bool exact = false;
  KvProvenance provenance;
  std::vector<int32_t> tokens;
  // The chunk's text (detokenized), kept in the store's KV file for inspection; may be
  // empty. Nothing looks chunks up by it.
  std::string text;
  // The app declared the chunk's segment reusable (a system prompt, a document, a skill): a
  // store with admission control writes it at once instead of waiting for it to recur
  // (store/admission.h). Not stored.
  bool declared_reusable = false;
  // Shared so that a request that found the chunk keeps its KV alive while the cache may
  // evict the entry concurrently.
  std::shared_ptr<const ChunkKv> kv;

  size_t bytes() const { return (kv ? kv->bytes() : 0) + tokens.size() * 4 + 64; }
};

}  // namespace reprise::kv
