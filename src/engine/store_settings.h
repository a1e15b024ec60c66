// Opening the persistent KV store for a model (`--store DIR` and friends).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "engine/loaded_model.h"
#include "reprise/defaults.h"
#include "reprise/types.h"
#include "store/chunk_store.h"

namespace reprise::engine {

// The largest memory or flash budget accepted, in MiB: 16 TiB. Larger values are typing
// mistakes; unchecked, a huge value shifted into bytes wraps to a tiny budget that evicts the
// whole store.
inline constexpr int64_t kMaxBudgetMib = int64_t{16} << 20;

// `mib` MiB in bytes. Errors: InvalidArgument naming `what` when mib is not in
// [1, kMaxBudgetMib].
Result<int64_t> BudgetMibToBytes(int64_t mib, std::string_view what);

struct StoreSettings {
  std::string dir;
  int64_t pool_mb = 512;      // memory pool
  int64_t disk_mb = 8192;     // flash budget
  KvCodec codec = KvCodec::kF16;
  bool cost_aware = true;     // false: LRU eviction (ablation)
  bool prefetch = true;
  // Admission control (store/admission.h): write a chunk once its text was seen in this many
  // prompts (declared reusable ones at once); 1 = every chunk.
  int admit_after = 1;
  double recompute_ratio = kDefaultRecomputeRatio;
  // Full prefill cost of one token, for eviction costs; 0 = estimated from the model size.
  double compute_ms_per_token = 0.0;
  // The remote tier (store/remote_tier.h); url empty: none.
  store::RemoteOptions remote;
};

// Opens the store for KV of `kv_fingerprint` (CompiledModel::kv_fingerprint: the model and
// the arithmetic that computes its KV); rows of any other are not seen. Errors:
// InvalidArgument (budgets outside [1, kMaxBudgetMib], no fingerprint), those of
// ChunkStore::Open.
Result<std::unique_ptr<store::ChunkStore>> OpenChunkStore(const LoadedModel& model,
                                                          uint64_t kv_fingerprint,
                                                          const StoreSettings& settings);

}  // namespace reprise::engine
