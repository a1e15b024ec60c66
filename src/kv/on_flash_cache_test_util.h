// Test support: a memory chunk cache that behaves as if its chunks were on flash — the index
// (Peek, PeekByContent, Children, FindCandidates) lists entries without their KV, so a
// reuse::KvLoader reads each through Find, on its thread — with a hook that runs before every
// such read (a slow or a held-back storage read).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kv/memory_chunk_cache.h"

namespace reprise::kv::testing_caches {

class OnFlashChunkCache : public MemoryChunkCache {
 public:
  explicit OnFlashChunkCache(std::function<void(ChunkId)> before_read = {})
      : MemoryChunkCache(int64_t{256} << 20), before_read_(std::move(before_read)) {}

  std::shared_ptr<const ChunkEntry> Find(ChunkId id) override {
    if (before_read_) before_read_(id);
    return MemoryChunkCache::Find(id);
  }
  std::shared_ptr<const ChunkEntry> Peek(ChunkId id) override {
    return WithoutKv(MemoryChunkCache::Peek(id));
  }
  std::shared_ptr<const ChunkEntry> PeekByContent(ContentHash content) override {
    return WithoutKv(MemoryChunkCache::PeekByContent(content));
  }
  std::vector<std::shared_ptr<const ChunkEntry>> Children(ChunkId parent) override {
    std::vector<std::shared_ptr<const ChunkEntry>> children = MemoryChunkCache::Children(parent);
    for (auto& child : children) child = WithoutKv(child);
    return children;
  }
  std::shared_ptr<const ChunkEntry> FindByContent(ContentHash content) override {
    std::shared_ptr<const ChunkEntry> entry = MemoryChunkCache::PeekByContent(content);
    return entry ? Find(entry->id) : nullptr;
  }
  std::vector<ChunkCandidate> FindCandidates(std::span<const int32_t> tokens, std::string_view text,
                                             int max_candidates) override {
    std::vector<ChunkCandidate> candidates =
        MemoryChunkCache::FindCandidates(tokens, text, max_candidates);
    for (ChunkCandidate& c : candidates) c.entry = WithoutKv(c.entry);
    return candidates;
  }

 private:
  static std::shared_ptr<const ChunkEntry> WithoutKv(std::shared_ptr<const ChunkEntry> entry) {
    if (!entry) return nullptr;
    auto skeleton = std::make_shared<ChunkEntry>(*entry);
    skeleton->kv = nullptr;
    return skeleton;
  }

  std::function<void(ChunkId)> before_read_;
};

}  // namespace reprise::kv::testing_caches
