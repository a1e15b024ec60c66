#include "store/admission.h"

#include <algorithm>

namespace reprise::store {

SightingCounter::SightingCounter(size_t capacity) : capacity_(std::max<size_t>(capacity, 2)) {}

int64_t SightingCounter::Sight(const std::string& name_space, kv::ContentHash content,
                               int64_t now_us) {
  PoolKey key{name_space, content};
  auto [it, is_new] = counts_.try_emplace(key);
  Sighting& s = it->second;
  ++s.count;
  s.last_seen_us = std::max(s.last_seen_us, now_us);
  if (!s.changed) {
    s.changed = true;
    changed_.push_back(std::move(key));
  }
  const int64_t count = s.count;
  if (counts_.size() > capacity_) ForgetOldest();
  return count;
}

int64_t SightingCounter::Count(const std::string& name_space, kv::ContentHash content) const {
  auto it = counts_.find(PoolKey{name_space, content});
  return it == counts_.end() ? 0 : it->second.count;
}

void SightingCounter::Restore(const SightingRow& row) {
  Sighting& s = counts_[PoolKey{row.name_space, row.content}];
  s.count = std::max(s.count, row.count);
  s.last_seen_us = std::max(s.last_seen_us, row.last_seen_us);
  if (counts_.size() > capacity_) ForgetOldest();
}

std::vector<SightingRow> SightingCounter::TakeChanged() {
  std::vector<SightingRow> rows;
  rows.reserve(changed_.size());
  for (PoolKey& key : changed_) {
    auto it = counts_.find(key);
    if (it == counts_.end()) continue;  // forgotten meanwhile
    it->second.changed = false;
    rows.push_back(
        {std::move(key.name_space), key.value, it->second.count, it->second.last_seen_us});
  }
  changed_.clear();
  return rows;
}

void SightingCounter::ForgetOldest() {
  // Amortized: one sort per capacity/2 insertions.
  std::vector<std::pair<int64_t, const PoolKey*>> by_time;
  by_time.reserve(counts_.size());
  for (const auto& [key, s] : counts_) by_time.emplace_back(s.last_seen_us, &key);
  const size_t forget = counts_.size() - capacity_ / 2;
  std::nth_element(by_time.begin(), by_time.begin() + static_cast<std::ptrdiff_t>(forget),
                   by_time.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PoolKey> gone;
  gone.reserve(forget);
  for (size_t i = 0; i < forget; ++i) gone.push_back(*by_time[i].second);
  for (const PoolKey& key : gone) counts_.erase(key);
}

}  // namespace reprise::store
