// Prompts and cached entries for the reuse layer's planner tests: a prompt made of parts
// (one chunk each), an entry with zeroed KV, a prompt's path cached as a request leaves it.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "kv/chunk.h"
#include "kv/chunk_cache.h"
#include "reuse/reuse_planner.h"
#include "reuse/token_test_util.h"

namespace reprise::reuse::testing_plans {

inline constexpr uint64_t kFingerprint = 11;
using testing_tokens::Tokens;

// Chunks of a prompt made of `parts`, one chunk per part.
struct Prompt {
  Tokens tokens;
  std::vector<PromptChunk> chunks;
};

inline Prompt MakePrompt(std::span<const Tokens> parts) {
  Prompt p;
  for (const Tokens& part : parts) {
    PromptChunk c;
    c.begin = static_cast<int>(p.tokens.size());
    p.tokens.insert(p.tokens.end(), part.begin(), part.end());
    c.end = static_cast<int>(p.tokens.size());
    c.content = kv::HashTokens(kFingerprint, part);
    p.chunks.push_back(c);
  }
  return p;
}

inline Prompt MakePrompt(std::initializer_list<Tokens> parts) {
  return MakePrompt(std::span<const Tokens>(parts.begin(), parts.size()));
}

inline std::shared_ptr<kv::ChunkEntry> Entry(kv::ChunkId parent, const Tokens& tokens, bool exact) {
  auto e = std::make_shared<kv::ChunkEntry>();
  e->parent = parent;
  e->content = kv::HashTokens(kFingerprint, tokens);
  e->id = kv::ChainId(parent, e->content);
  e->exact = exact;
  e->tokens = tokens;
  auto kv = std::make_shared<kv::ChunkKv>();
  kv->num_layers = 1;
  kv->num_kv_heads = 1;
  kv->head_dim = 2;
  kv->num_tokens = static_cast<int>(tokens.size());
  kv->Allocate();
  e->kv = std::move(kv);
  return e;
}

// Caches a prompt as a previous request would have: every chunk on its prefix-tree path,
// exact (each computed after the ones before it).
inline void CachePath(kv::ChunkCache& cache, std::initializer_list<Tokens> parts) {
  kv::ChunkId parent = kv::kRootChunkId;
  for (const Tokens& part : parts) {
    auto e = Entry(parent, part, /*exact=*/true);
    parent = e->id;
    ASSERT_TRUE(cache.Insert(e).ok());
  }
}

}  // namespace reprise::reuse::testing_plans
