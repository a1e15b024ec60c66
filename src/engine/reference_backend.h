// ReferenceBackend: InferenceBackend over model::ReferenceModel, the plain float oracle.
// Slow but obviously correct; selected with `reprise run --reference`.
#pragma once

#include <memory>
#include <vector>

#include "engine/inference_backend.h"
#include "engine/loaded_model.h"
#include "model/reference_model.h"

namespace reprise::engine {

class ReferenceBackend : public InferenceBackend {
 public:
  // Dequantizes the model's weights to float. Errors: those of ReferenceModel::Load.
  static Result<std::unique_ptr<ReferenceBackend>> Create(const LoadedModel& model,
                                                          int capacity_tokens);

  const model::ModelConfig& config() const override { return model_.config(); }
  int num_tokens() const override { return cache_.num_tokens; }
  int capacity_tokens() const override { return cache_.capacity_tokens; }
  Result<std::span<const float>> Append(std::span<const int32_t> tokens) override;
  void Truncate(int num_tokens) override;
  const char* name() const override { return "reference"; }

 private:
  explicit ReferenceBackend(model::ReferenceModel model, int capacity_tokens)
      : model_(std::move(model)), cache_(model_.NewCache(capacity_tokens)) {}

  model::ReferenceModel model_;
  model::ReferenceCache cache_;
  std::vector<float> last_logits_;
};

}  // namespace reprise::engine
