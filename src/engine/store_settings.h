// Opening the persistent KV store for a model (`--store DIR` and friends).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/loaded_model.h"
#include "store/chunk_store.h"

namespace reprise::engine {

struct StoreSettings {
  std::string dir;
  int64_t pool_mb = 512;   // memory pool
  int64_t disk_mb = 8192;  // flash budget
  std::string codec = "f16";  // "f16" (exact) or "int8" (INT8 + Hadamard)
  bool cost_aware = true;     // false: LRU eviction (ablation)
  bool prefetch = true;
  double recompute_ratio = 0.25;
  // Full prefill cost of one token, for eviction costs; 0 = estimated from the model size.
  double compute_ms_per_token = 0.0;
};

// Errors: InvalidArgument (bad codec or budgets), those of ChunkStore::Open.
Result<std::unique_ptr<store::ChunkStore>> OpenChunkStore(const LoadedModel& model,
                                                          const StoreSettings& settings);

}  // namespace reprise::engine
