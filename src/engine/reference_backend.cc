#include "engine/reference_backend.h"

#include "base/check.h"

namespace reprise::engine {

Result<std::unique_ptr<ReferenceBackend>> ReferenceBackend::Create(const LoadedModel& model,
                                                                   int capacity_tokens) {
  if (capacity_tokens <= 0) return InvalidArgumentError("context size must be positive");
  REPRISE_ASSIGN_OR_RETURN(model::ReferenceModel reference,
                           model::ReferenceModel::Load(model.file()));
  return std::unique_ptr<ReferenceBackend>(
      new ReferenceBackend(std::move(reference), capacity_tokens));
}

Result<std::span<const float>> ReferenceBackend::Append(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgumentError("no tokens to run");
  REPRISE_ASSIGN_OR_RETURN(std::vector<float> logits, model_.Forward(cache_, tokens));
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  last_logits_.assign(logits.end() - static_cast<long>(vocab), logits.end());
  return std::span<const float>(last_logits_);
}

void ReferenceBackend::Truncate(int num_tokens) {
  REPRISE_CHECK(num_tokens >= 0 && num_tokens <= cache_.num_tokens);
  cache_.num_tokens = num_tokens;
}

}  // namespace reprise::engine
