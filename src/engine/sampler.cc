#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace reprise::engine {

int32_t Argmax(std::span<const float> values) {
  REPRISE_CHECK(!values.empty());
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

Result<Sampler> Sampler::Create(const SamplerOptions& options) {
  if (!(options.temperature >= 0.0f) || !std::isfinite(options.temperature)) {
    return InvalidArgumentError("temperature must be >= 0");
  }
  if (options.top_k < 0) return InvalidArgumentError("top-k must be >= 0");
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f)) {
    return InvalidArgumentError("top-p must be in (0, 1]");
  }
  return Sampler(options);
}

int32_t Sampler::Sample(std::span<const float> logits) {
  REPRISE_CHECK(!logits.empty());
  if (options_.temperature == 0.0f) return Argmax(logits);
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
  }
  if (candidates_.empty()) return Argmax(logits);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < keep) {
    keep = static_cast<size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<long>(keep),
                      candidates_.end(), by_logit);
    candidates_.resize(keep);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  // Softmax at the temperature, in place (first = probability).
  const float max_logit = candidates_.front().first;
  double total = 0.0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / options_.temperature);
    total += value;
  }
  double cumulative = 0.0;
  size_t nucleus = candidates_.size();
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += candidates_[i].first / total;
    if (cumulative >= options_.top_p) {
      nucleus = i + 1;
      break;
    }
  }
  double nucleus_total = 0.0;
  for (size_t i = 0; i < nucleus; ++i) nucleus_total += candidates_[i].first;
  double draw = rng_.NextDouble() * nucleus_total;
  for (size_t i = 0; i < nucleus; ++i) {
    draw -= candidates_[i].first;
    if (draw <= 0.0) return candidates_[i].second;
  }
  return candidates_[nucleus - 1].second;
}

}  // namespace reprise::engine
