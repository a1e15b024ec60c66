#include "kv/chunk.h"

#include <xxhash.h>

#include <cstdio>

#include "base/check.h"

namespace reprise::kv {

ContentHash HashTokens(uint64_t model_fingerprint, std::span<const int32_t> tokens) {
  const ContentHash h = XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), model_fingerprint);
  return h == 0 ? 1 : h;
}

ChunkId ChainId(ChunkId parent, ContentHash content) {
  const uint64_t pair[2] = {parent, content};
  const ChunkId h = XXH3_64bits(pair, sizeof(pair));
  return h == kRootChunkId ? 1 : h;
}

std::string DescribeProvenance(const KvProvenance& provenance) {
  switch (provenance.origin) {
    case KvOrigin::kComputed:
      return "computed";
    case KvOrigin::kBlended: {
      if (provenance.recompute_ratio <= 0.0f) return "reused as is";
      char text[64];
      std::snprintf(text, sizeof(text), "blended r=%.3g @layer %d",
                    static_cast<double>(provenance.recompute_ratio), provenance.check_layer);
      return text;
    }
    case KvOrigin::kUnknown:
      break;
  }
  return "unknown";
}

void ChunkKv::Allocate() {
  REPRISE_CHECK(num_layers > 0 && num_kv_heads > 0 && head_dim > 0 && num_tokens >= 0);
  const size_t n = static_cast<size_t>(num_layers) * num_kv_heads * num_tokens * head_dim;
  k.assign(n, 0);
  v.assign(n, 0);
  positions.assign(static_cast<size_t>(num_tokens), 0);
}

}  // namespace reprise::kv
