#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace reprise::engine {

double LogSumExp(std::span<const float> logits) {
  REPRISE_CHECK(!logits.empty());
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const float x : logits) max_logit = std::max(max_logit, x);
  if (!std::isfinite(max_logit)) return max_logit;
  double total = 0.0;
  for (const float x : logits) total += std::exp(static_cast<double>(x) - max_logit);
  return max_logit + std::log(total);
}

LogprobScorer::LogprobScorer(const tokenizer::Tokenizer& tokenizer, int num_top)
    : tokenizer_(&tokenizer), num_top_(num_top) {
  REPRISE_CHECK(num_top >= 0 && num_top <= kMaxTopLogprobs);
  best_.reserve(static_cast<size_t>(num_top) + 1);
}

PositionLogprobs LogprobScorer::Score(std::span<const float> logits, int32_t token) {
  REPRISE_CHECK(token >= 0 && static_cast<size_t>(token) < logits.size());
  const double normalizer = LogSumExp(logits);
  auto entry = [&](int32_t id) {
    return TokenLogprob{id, tokenizer_->TokenPiece(id),
                        static_cast<float>(logits[static_cast<size_t>(id)] - normalizer)};
  };
  PositionLogprobs out;
  out.token = entry(token);
  if (num_top_ == 0) return out;
  // One pass keeping the num_top largest, best first (a lower id first among equals: the
  // scan goes up in id, and an equal value never displaces an earlier one).
  best_.clear();
  const size_t keep = static_cast<size_t>(num_top_);
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (best_.size() == keep && !(x > best_.back().first)) continue;
    auto at = std::upper_bound(best_.begin(), best_.end(), x,
                               [](float value, const auto& b) { return value > b.first; });
    best_.insert(at, {x, static_cast<int32_t>(i)});
    if (best_.size() > keep) best_.pop_back();
  }
  for (const auto& [value, id] : best_) out.top.push_back(entry(id));
  return out;
}

}  // namespace reprise::engine
