#include "engine/store_settings.h"

#include <climits>
#include <optional>

#include "base/check.h"
#include "base/checked_math.h"

namespace reprise::engine {

Result<int64_t> BudgetMibToBytes(int64_t mib, std::string_view what) {
  if (mib < 1 || mib > kMaxBudgetMib) {
    return InvalidArgumentError(std::string(what) + " must be in [1, " +
                                std::to_string(kMaxBudgetMib) + "] MiB, not " +
                                std::to_string(mib));
  }
  const std::optional<uint64_t> bytes = CheckedMul(static_cast<uint64_t>(mib), uint64_t{1} << 20);
  REPRISE_CHECK(bytes.has_value() && *bytes <= static_cast<uint64_t>(INT64_MAX));
  return static_cast<int64_t>(*bytes);
}

Result<std::unique_ptr<store::ChunkStore>> OpenChunkStore(const LoadedModel& model,
                                                          uint64_t kv_fingerprint,
                                                          const StoreSettings& settings) {
  if (kv_fingerprint == 0) return InvalidArgumentError("a store needs the KV's fingerprint");
  store::StoreOptions options;
  options.dir = settings.dir;
  REPRISE_ASSIGN_OR_RETURN(options.pool_bytes, BudgetMibToBytes(settings.pool_mb, "pool budget"));
  REPRISE_ASSIGN_OR_RETURN(options.disk_bytes, BudgetMibToBytes(settings.disk_mb, "disk budget"));
  options.codec = settings.codec;
  options.model_fingerprint = kv_fingerprint;
  options.cost_aware = settings.cost_aware;
  options.prefetch = settings.prefetch;
  options.admit_after_sightings = settings.admit_after;
  options.remote = settings.remote;
  const model::ModelConfig& config = model.config();
  options.kv_num_layers = config.num_layers;
  options.kv_num_kv_heads = config.num_kv_heads;
  options.kv_head_dim = config.head_dim;
  // A token's prefill cost from the weights streamed per token (docs/benchmarks.md, "Figures
  // behind constants in the code"); only the ratios between costs matter to the policy.
  const double compute = settings.compute_ms_per_token > 0
                             ? settings.compute_ms_per_token
                             : std::max(0.01, model.file().file_size_bytes() / 60e6);
  options.costs = store::CostModel{1024.0 * 1024.0, compute, compute * settings.recompute_ratio};
  return store::ChunkStore::Open(options);
}

}  // namespace reprise::engine
