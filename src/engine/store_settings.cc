#include "engine/store_settings.h"

namespace reprise::engine {

Result<std::unique_ptr<store::ChunkStore>> OpenChunkStore(const LoadedModel& model,
                                                          const StoreSettings& settings) {
  store::StoreOptions options;
  options.dir = settings.dir;
  if (settings.pool_mb <= 0 || settings.disk_mb <= 0) {
    return InvalidArgumentError("store budgets must be positive");
  }
  options.pool_bytes = settings.pool_mb << 20;
  options.disk_bytes = settings.disk_mb << 20;
  if (settings.codec == "f16") {
    options.codec = store::KvCodec::kF16;
  } else if (settings.codec == "int8") {
    options.codec = store::KvCodec::kInt8Hadamard;
  } else {
    return InvalidArgumentError("unknown KV codec '" + settings.codec + "' (f16, int8)");
  }
  options.model_fingerprint = model.fingerprint();
  options.cost_aware = settings.cost_aware;
  options.prefetch = settings.prefetch;
  // About 60 MB of weights streamed per millisecond per token on this class of CPU when
  // prefilling in batches; only the ratios between costs matter to the policy.
  const double compute = settings.compute_ms_per_token > 0
                             ? settings.compute_ms_per_token
                             : std::max(0.01, model.file().file_size_bytes() / 60e6);
  options.costs = store::CostModel{1024.0 * 1024.0, compute, compute * settings.recompute_ratio};
  return store::ChunkStore::Open(options);
}

}  // namespace reprise::engine
