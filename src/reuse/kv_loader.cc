#include "reuse/kv_loader.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"

namespace reprise::reuse {

bool IsPlannedKv(const kv::ChunkEntry& planned, const kv::ChunkEntry& loaded,
                 const kv::KvShape& shape) {
  if (!loaded.kv || loaded.id != planned.id || loaded.content != planned.content ||
      loaded.tokens != planned.tokens) {
    return false;
  }
  const kv::ChunkKv& kv = *loaded.kv;
  const size_t rows = static_cast<size_t>(shape.num_layers) *
                      static_cast<size_t>(shape.num_kv_heads) * static_cast<size_t>(kv.num_tokens) *
                      static_cast<size_t>(shape.head_dim);
  return kv.num_tokens == static_cast<int>(planned.tokens.size()) &&
         kv.num_layers == shape.num_layers && kv.num_kv_heads == shape.num_kv_heads &&
         kv.head_dim == shape.head_dim && kv.k.size() == rows && kv.v.size() == rows &&
         kv.positions.size() == static_cast<size_t>(kv.num_tokens);
}

KvLoader::KvLoader(kv::ChunkCache* cache, const ReusePlan& plan, const kv::KvShape& shape)
    : cache_(cache), shape_(shape) {
  REPRISE_CHECK(cache_ != nullptr || plan.sources.empty()) << "sources but no cache";
  std::vector<Slot> slots(plan.sources.size());
  for (size_t i = 0; i < plan.sources.size(); ++i) slots[i].planned = plan.sources[i];
  // By first use: the prefix first, then the reused chunks in prompt order.
  for (const TokenSource& t : plan.tokens) {
    if (t.kind == TokenKind::kNew || t.source < 0) continue;
    const auto s = static_cast<size_t>(t.source);
    if (s >= slots.size() || slots[s].used) continue;
    Slot& slot = slots[s];
    slot.used = true;
    if (slot.planned->kv) {
      // In memory: a reference. Find counts the use (recency, hits); the planned entry's KV
      // stays valid even if the cache evicted or replaced it meanwhile.
      cache_->Find(slot.planned->id);
      if (IsPlannedKv(*slot.planned, *slot.planned, shape_)) slot.kv = slot.planned->kv;
      slot.done = true;
      ++num_from_memory_;
    } else {
      read_order_.push_back(static_cast<int>(s));
    }
  }
  // A source no token uses (the last token's, made new) is done, and never loaded.
  for (Slot& slot : slots) {
    if (!slot.used) slot.done = true;
  }
  {
    MutexLock lock(mutex_);
    slots_ = std::move(slots);
  }
  if (!read_order_.empty()) reader_ = std::thread([this] { ReadAll(); });
}

KvLoader::~KvLoader() {
  if (reader_.joinable()) reader_.join();
}

void KvLoader::ReadAll() {
  for (const int s : read_order_) {
    std::shared_ptr<const kv::ChunkEntry> planned;
    {
      MutexLock lock(mutex_);
      planned = slots_[static_cast<size_t>(s)].planned;
    }
    const std::shared_ptr<const kv::ChunkEntry> loaded = cache_->Find(planned->id);
    std::shared_ptr<const kv::ChunkKv> kv;
    if (loaded && IsPlannedKv(*planned, *loaded, shape_)) kv = loaded->kv;
    {
      MutexLock lock(mutex_);
      slots_[static_cast<size_t>(s)].kv = std::move(kv);
      slots_[static_cast<size_t>(s)].done = true;
    }
    ready_.NotifyAll();
  }
}

std::shared_ptr<const kv::ChunkKv> KvLoader::Wait(int index) {
  const auto start = std::chrono::steady_clock::now();
  MutexLock lock(mutex_);
  Slot& slot = slots_.at(static_cast<size_t>(index));
  while (!slot.done) ready_.Wait(lock);
  wait_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return slot.kv;
}

std::vector<kv::ChunkId> KvLoader::WaitAll() {
  std::vector<kv::ChunkId> failed;
  size_t n = 0;
  {
    MutexLock lock(mutex_);
    n = slots_.size();
  }
  for (size_t s = 0; s < n; ++s) {
    std::shared_ptr<const kv::ChunkKv> kv = Wait(static_cast<int>(s));
    MutexLock lock(mutex_);
    if (!kv && slots_[s].used) failed.push_back(slots_[s].planned->id);
  }
  return failed;
}

}  // namespace reprise::reuse
