#include "kv/memory_chunk_cache.h"

namespace reprise::kv {
namespace {

template <typename Map, typename Key, typename Value>
void EraseValue(Map& map, const Key& key, const Value& value) {
  auto range = map.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == value) {
      map.erase(it);
      return;
    }
  }
}

}  // namespace

void MemoryChunkCache::Touch(Slot& slot) { lru_.splice(lru_.begin(), lru_, slot.lru); }

void MemoryChunkCache::Erase(ChunkId id) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  const ChunkEntry& e = *it->second.entry;
  EraseValue(children_, e.parent, id);
  EraseValue(by_content_, e.content, id);
  // Every stored entry is indexed, so Remove cannot miss.
  spans_.Remove(id).IgnoreError();
  bytes_ -= static_cast<int64_t>(e.bytes());
  lru_.erase(it->second.lru);
  slots_.erase(it);
}

void MemoryChunkCache::EvictToBudget() {
  while (bytes_ > budget_bytes_ && !lru_.empty()) {
    Erase(lru_.back());
    ++evictions_;
  }
}

Status MemoryChunkCache::Insert(std::shared_ptr<const ChunkEntry> entry) {
  if (static_cast<int64_t>(entry->bytes()) > budget_bytes_) {
    return ResourceExhaustedError("a chunk of " + std::to_string(entry->bytes()) +
                                  " bytes exceeds the cache budget of " +
                                  std::to_string(budget_bytes_));
  }
  MutexLock lock(mutex_);
  // Exact KV is never replaced by approximate KV, nor by the same exact KV again (the check
  // and the insert under one lock: another session may insert the same chunk meanwhile).
  if (auto it = slots_.find(entry->id); it != slots_.end() && it->second.entry->exact) {
    Touch(it->second);
    return Status::Ok();
  }
  Erase(entry->id);
  lru_.push_front(entry->id);
  children_.emplace(entry->parent, entry->id);
  by_content_.emplace(entry->content, entry->id);
  // Erase() above removed any earlier entry with this id, so Add cannot collide.
  spans_.Add(entry->id, entry->tokens).IgnoreError();
  bytes_ += static_cast<int64_t>(entry->bytes());
  const ChunkId id = entry->id;
  slots_[id] = Slot{std::move(entry), lru_.begin()};
  ++inserts_;
  EvictToBudget();
  return Status::Ok();
}

std::shared_ptr<const ChunkEntry> MemoryChunkCache::Find(ChunkId id) {
  MutexLock lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return nullptr;
  Touch(it->second);
  ++hits_;
  return it->second.entry;
}

std::optional<ChunkLink> MemoryChunkCache::LinkOf(ChunkId id) {
  MutexLock lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  return ChunkLink{it->second.entry->parent, it->second.entry->content};
}

bool MemoryChunkCache::Contains(ChunkId id, bool require_exact) {
  MutexLock lock(mutex_);
  auto it = slots_.find(id);
  return it != slots_.end() && (!require_exact || it->second.entry->exact);
}

std::vector<std::shared_ptr<const ChunkEntry>> MemoryChunkCache::Children(ChunkId parent) {
  MutexLock lock(mutex_);
  std::vector<std::shared_ptr<const ChunkEntry>> out;
  auto range = children_.equal_range(parent);
  for (auto it = range.first; it != range.second; ++it) {
    out.push_back(slots_.at(it->second).entry);
  }
  return out;
}

MemoryChunkCache::Slot* MemoryChunkCache::BestByContent(ContentHash content) {
  Slot* best = nullptr;
  auto range = by_content_.equal_range(content);
  for (auto it = range.first; it != range.second; ++it) {
    Slot& slot = slots_.at(it->second);
    // Exact entries first, then the most recently used (LRU positions compare by walking,
    // so keep the first found among equals: the multimap holds few entries per content).
    if (best == nullptr || (slot.entry->exact && !best->entry->exact)) best = &slot;
  }
  return best;
}

std::shared_ptr<const ChunkEntry> MemoryChunkCache::FindByContent(ContentHash content) {
  MutexLock lock(mutex_);
  Slot* best = BestByContent(content);
  if (best == nullptr) return nullptr;
  Touch(*best);
  ++hits_;
  return best->entry;
}

std::shared_ptr<const ChunkEntry> MemoryChunkCache::Peek(ChunkId id) {
  MutexLock lock(mutex_);
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : it->second.entry;
}

std::shared_ptr<const ChunkEntry> MemoryChunkCache::PeekByContent(ContentHash content) {
  MutexLock lock(mutex_);
  const Slot* best = BestByContent(content);
  return best == nullptr ? nullptr : best->entry;
}

std::vector<ChunkCandidate> MemoryChunkCache::FindCandidates(std::span<const int32_t> tokens,
                                                             std::string_view /*text*/,
                                                             int max_candidates) {
  MutexLock lock(mutex_);
  std::vector<ChunkCandidate> out;
  for (const SpanCandidate& c : spans_.FindCandidates(tokens, max_candidates)) {
    const auto slot = slots_.find(c.chunk_id);
    if (slot == slots_.end()) continue;  // cannot happen: the index holds stored entries only
    out.push_back(
        ChunkCandidate{c.chunk_id, static_cast<double>(c.num_shared), slot->second.entry});
  }
  return out;
}

ChunkCacheStats MemoryChunkCache::stats() {
  MutexLock lock(mutex_);
  return ChunkCacheStats{static_cast<int64_t>(slots_.size()),
                         bytes_,
                         budget_bytes_,
                         evictions_,
                         inserts_,
                         hits_,
                         hits_,
                         0};
}

}  // namespace reprise::kv
