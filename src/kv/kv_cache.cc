#include "kv/kv_cache.h"

#include <sys/mman.h>

#include "base/check.h"

namespace reprise::kv {

void KvCache::Unmapper::operator()(uint16_t* p) const { ::munmap(p, bytes); }

Result<std::unique_ptr<KvCache>> KvCache::Create(const KvShape& shape) {
  if (shape.num_layers <= 0 || shape.num_kv_heads <= 0 || shape.head_dim <= 0 ||
      shape.capacity <= 0) {
    return InvalidArgumentError("KV cache dimensions must be positive");
  }
  std::unique_ptr<KvCache> cache(new KvCache(shape));
  const size_t bytes = static_cast<size_t>(shape.bytes_per_layer() / 2);
  for (int l = 0; l < shape.num_layers; ++l) {
    for (auto* list : {&cache->k_, &cache->v_}) {
      void* memory =
          ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (memory == MAP_FAILED) {
        return ResourceExhaustedError("cannot allocate the KV cache (" +
                                      std::to_string(shape.total_bytes() >> 20) + " MiB)");
      }
      // Zero pages: never-written slots hold finite values.
      list->emplace_back(static_cast<uint16_t*>(memory), Unmapper{bytes});
    }
  }
  cache->slot_positions_.assign(static_cast<size_t>(shape.capacity), -1);
  return cache;
}

void KvCache::ClearFrom(int first) {
  REPRISE_CHECK(first >= 0 && first <= shape_.capacity);
  std::fill(slot_positions_.begin() + first, slot_positions_.end(), -1);
}

}  // namespace reprise::kv
