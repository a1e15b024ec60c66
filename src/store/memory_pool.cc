#include "store/memory_pool.h"

#include <algorithm>
#include <unordered_set>

#include "base/check.h"

namespace reprise::store {
namespace {

void EraseId(std::unordered_map<PoolKey, std::vector<kv::ChunkId>, PoolKeyHash>& index,
             const PoolKey& key, kv::ChunkId id) {
  auto it = index.find(key);
  if (it == index.end()) return;
  std::erase(it->second, id);
  if (it->second.empty()) index.erase(it);
}

}  // namespace

MemoryPool::MemoryPool(int64_t budget_bytes, std::unique_ptr<EvictionPolicy> policy)
    : budget_bytes_(budget_bytes), policy_(std::move(policy)) {
  REPRISE_CHECK(budget_bytes_ > 0 && policy_ != nullptr);
}

ChunkInfo MemoryPool::InfoOf(const std::string& name_space, const PoolSlot& slot) {
  const kv::ChunkEntry& e = *slot.entry;
  ChunkInfo info;
  info.id = PolicyChunkId(name_space, e.id);
  info.parent = PolicyChunkId(name_space, e.parent);
  info.content = e.content;
  info.num_tokens = static_cast<int>(e.tokens.size());
  info.bytes = slot.bytes;
  info.exact = e.exact;
  info.pinned = slot.pinned;
  info.in_pool = true;
  return info;
}

void MemoryPool::SetDirty(PoolSlot& slot, bool dirty) {
  num_dirty_ += static_cast<int64_t>(dirty) - static_cast<int64_t>(slot.dirty);
  slot.dirty = dirty;
}

void MemoryPool::SetAwaitingAdmission(PoolSlot& slot, bool awaiting) {
  num_awaiting_admission_ +=
      static_cast<int64_t>(awaiting) - static_cast<int64_t>(slot.awaiting_admission);
  slot.awaiting_admission = awaiting;
}

void MemoryPool::SetPersisted(const PoolKey& key, PoolSlot& slot, bool persisted) {
  slot.persisted = persisted;
  auto index = unpersisted_spans_.find(key.name_space);
  if (persisted) {
    if (index != unpersisted_spans_.end()) {
      index->second.Remove(key.value).IgnoreError();  // NotFound: it was not indexed
      if (index->second.num_chunks() == 0) unpersisted_spans_.erase(index);
    }
    return;
  }
  if (index == unpersisted_spans_.end()) {
    index = unpersisted_spans_.emplace(key.name_space, *kv::SpanFingerprintIndex::Create()).first;
  }
  if (!index->second.Contains(key.value))
    index->second.Add(key.value, slot.entry->tokens).IgnoreError();
}

void MemoryPool::Unindex(const PoolKey& key, const PoolSlot& slot) {
  const kv::ChunkEntry& e = *slot.entry;
  EraseId(by_content_, PoolKey{key.name_space, e.content}, e.id);
  EraseId(by_parent_, PoolKey{key.name_space, e.parent}, e.id);
  if (auto index = unpersisted_spans_.find(key.name_space); index != unpersisted_spans_.end()) {
    index->second.Remove(key.value).IgnoreError();  // NotFound: it was persisted
    if (index->second.num_chunks() == 0) unpersisted_spans_.erase(index);
  }
  bytes_ -= slot.bytes;
  PoolUsage& usage = usage_[key.name_space];
  usage.bytes -= slot.bytes;
  --usage.num_chunks;
  if (usage.num_chunks == 0) usage_.erase(key.name_space);
}

void MemoryPool::Add(const std::string& name_space, std::shared_ptr<const kv::ChunkEntry> entry,
                     bool dirty, bool persisted, double now_s, bool awaiting_admission) {
  REPRISE_CHECK(entry != nullptr);
  const PoolKey key{name_space, entry->id};
  auto [it, is_new] = slots_.try_emplace(key);
  PoolSlot& slot = it->second;
  if (!is_new) {
    dirty = dirty || slot.dirty;
    Unindex(key, slot);
  }
  SetDirty(slot, dirty);
  SetAwaitingAdmission(slot, awaiting_admission && !dirty && !persisted);
  slot.bytes = static_cast<int64_t>(entry->bytes());
  slot.entry = std::move(entry);
  const kv::ChunkEntry& e = *slot.entry;
  by_content_[PoolKey{name_space, e.content}].push_back(e.id);
  by_parent_[PoolKey{name_space, e.parent}].push_back(e.id);
  SetPersisted(key, slot, persisted);
  bytes_ += slot.bytes;
  PoolUsage& usage = usage_[name_space];
  usage.bytes += slot.bytes;
  ++usage.num_chunks;
  policy_->Touch(PolicyChunkId(name_space, e.id), now_s);
}

void MemoryPool::RemoveKey(const PoolKey& key) {
  auto it = slots_.find(key);
  if (it == slots_.end()) return;
  Unindex(key, it->second);
  SetDirty(it->second, false);
  SetAwaitingAdmission(it->second, false);
  policy_->Forget(PolicyChunkId(key.name_space, key.value));
  slots_.erase(it);
}

void MemoryPool::Remove(const std::string& name_space, kv::ChunkId id) {
  RemoveKey(PoolKey{name_space, id});
}

void MemoryPool::Clear(const std::optional<std::string>& name_space) {
  // A maintenance command (cache clear): a scan is fine here.
  std::vector<PoolKey> remove;
  for (const auto& [key, slot] : slots_) {
    if (!name_space || key.name_space == *name_space) remove.push_back(key);
  }
  for (const PoolKey& key : remove) RemoveKey(key);
}

std::shared_ptr<const kv::ChunkEntry> MemoryPool::Admit(const std::string& name_space,
                                                        kv::ChunkId id) {
  auto it = slots_.find(PoolKey{name_space, id});
  if (it == slots_.end() || !it->second.awaiting_admission) return nullptr;
  SetAwaitingAdmission(it->second, false);
  SetDirty(it->second, true);
  return it->second.entry;
}

std::vector<kv::ChunkId> MemoryPool::AwaitingAdmission(const std::string& name_space) const {
  std::vector<kv::ChunkId> out;
  if (num_awaiting_admission_ == 0) return out;
  for (const auto& [key, slot] : slots_) {
    if (key.name_space == name_space && slot.awaiting_admission) out.push_back(key.value);
  }
  return out;
}

const PoolSlot* MemoryPool::Find(const std::string& name_space, kv::ChunkId id) const {
  auto it = slots_.find(PoolKey{name_space, id});
  return it == slots_.end() ? nullptr : &it->second;
}

std::shared_ptr<const kv::ChunkEntry> MemoryPool::Use(const std::string& name_space, kv::ChunkId id,
                                                      double now_s) {
  const PoolSlot* slot = Find(name_space, id);
  if (slot == nullptr) return nullptr;
  policy_->Touch(PolicyChunkId(name_space, id), now_s);
  return slot->entry;
}

const PoolSlot* MemoryPool::FindByContent(const std::string& name_space,
                                          kv::ContentHash content) const {
  auto it = by_content_.find(PoolKey{name_space, content});
  if (it == by_content_.end()) return nullptr;
  const PoolSlot* best = nullptr;
  // Latest placed first; an exact chunk wins over any inexact one.
  for (auto id = it->second.rbegin(); id != it->second.rend(); ++id) {
    const PoolSlot* slot = Find(name_space, *id);
    if (slot == nullptr) continue;
    if (best == nullptr || (slot->entry->exact && !best->entry->exact)) best = slot;
  }
  return best;
}

std::shared_ptr<const kv::ChunkEntry> MemoryPool::UseByContent(const std::string& name_space,
                                                               kv::ContentHash content,
                                                               double now_s) {
  const PoolSlot* best = FindByContent(name_space, content);
  if (best == nullptr) return nullptr;
  policy_->Touch(PolicyChunkId(name_space, best->entry->id), now_s);
  return best->entry;
}

std::vector<std::shared_ptr<const kv::ChunkEntry>> MemoryPool::Children(
    const std::string& name_space, kv::ChunkId parent) const {
  std::vector<std::shared_ptr<const kv::ChunkEntry>> out;
  auto it = by_parent_.find(PoolKey{name_space, parent});
  if (it == by_parent_.end()) return out;
  for (kv::ChunkId id : it->second) {
    if (const PoolSlot* slot = Find(name_space, id)) out.push_back(slot->entry);
  }
  return out;
}

std::vector<kv::SpanCandidate> MemoryPool::SearchUnpersistedSpans(const std::string& name_space,
                                                                  std::span<const int32_t> tokens,
                                                                  int max_results) const {
  const auto index = unpersisted_spans_.find(name_space);
  if (index == unpersisted_spans_.end()) return {};
  return index->second.FindCandidates(tokens, max_results);
}

std::vector<ChunkInfo> MemoryPool::Infos(const std::string& name_space,
                                         std::span<const kv::ChunkId> ids) const {
  std::vector<ChunkInfo> out;
  for (kv::ChunkId id : ids) {
    if (const PoolSlot* slot = Find(name_space, id)) out.push_back(InfoOf(name_space, *slot));
  }
  return out;
}

void MemoryPool::MarkWritten(const std::string& name_space, const kv::ChunkEntry* entry) {
  const PoolKey key{name_space, entry->id};
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.entry.get() != entry) return;
  SetDirty(it->second, false);
  SetPersisted(key, it->second, true);
}

void MemoryPool::MarkNotWritten(const std::string& name_space, const kv::ChunkEntry* entry) {
  auto it = slots_.find(PoolKey{name_space, entry->id});
  if (it == slots_.end() || it->second.entry.get() != entry) return;
  SetDirty(it->second, false);
}

void MemoryPool::MarkEvictedFromFlash(const std::string& name_space, kv::ChunkId id) {
  const PoolKey key{name_space, id};
  auto it = slots_.find(key);
  if (it != slots_.end()) SetPersisted(key, it->second, false);
}

void MemoryPool::ClearDirty() {
  for (auto& [key, slot] : slots_) {
    SetDirty(slot, false);
    SetAwaitingAdmission(slot, false);  // nothing will be written: ordinary chunks now
  }
}

void MemoryPool::SetPinned(const std::string& name_space, std::optional<kv::ChunkId> id,
                           bool pinned) {
  if (id) {
    auto it = slots_.find(PoolKey{name_space, *id});
    if (it != slots_.end()) it->second.pinned = pinned;
    return;
  }
  // Pinning a whole namespace is a maintenance command: a scan is fine here.
  for (auto& [key, slot] : slots_) {
    if (key.name_space == name_space) slot.pinned = pinned;
  }
}

int MemoryPool::EvictOverBudget(double now_s, int64_t* unadmitted) {
  if (bytes_ <= budget_bytes_) return 0;
  std::vector<ChunkInfo> candidates;
  std::unordered_map<uint64_t, PoolKey> key_of;  // policy id -> key
  for (const auto& [key, slot] : slots_) {
    if (slot.dirty || slot.pinned) continue;  // dirty ones leave after write-back
    candidates.push_back(InfoOf(key.name_space, slot));
    key_of.emplace(candidates.back().id, key);
  }
  const VictimSelection victims = policy_->SelectVictims(candidates, bytes_ - budget_bytes_, now_s);
  int evicted = 0;
  for (uint64_t id : victims.ids) {
    auto it = key_of.find(id);
    if (it == key_of.end()) continue;
    if (unadmitted != nullptr) {
      if (const PoolSlot* slot = Find(it->second.name_space, it->second.value);
          slot != nullptr && slot->awaiting_admission) {
        ++*unadmitted;
      }
    }
    RemoveKey(it->second);
    ++evicted;
  }
  return evicted;
}

PoolUsage MemoryPool::Usage(const std::string& name_space) const {
  auto it = usage_.find(name_space);
  return it == usage_.end() ? PoolUsage{} : it->second;
}

}  // namespace reprise::store
