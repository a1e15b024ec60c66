// Log-probabilities of tokens from a row of logits: what OpenAI's `logprobs` report (the
// sampled token's, and the most likely tokens' at that step). The log-softmax over the whole
// vocabulary, before temperature, top-k, top-p or a constraint's mask.
//
// Thread-compatible: a LogprobScorer holds scratch reused between calls; one per request.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "reprise/engine.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

// The most alternatives a position reports (OpenAI's bound on top_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

// log(sum(exp(logits))), computed stably (the max subtracted first); -inf logits (masked
// tokens) count as zero probability. Requires: logits not empty.
double LogSumExp(std::span<const float> logits);

class LogprobScorer {
 public:
  // `tokenizer` gives the tokens' text; it must outlive the scorer. Requires: 0 <= num_top <=
  // kMaxTopLogprobs.
  LogprobScorer(const tokenizer::Tokenizer& tokenizer, int num_top);

  // `token`'s log-probability under `logits`, with the num_top most likely tokens.
  // Requires: token indexes logits.
  PositionLogprobs Score(std::span<const float> logits, int32_t token);

 private:
  const tokenizer::Tokenizer* tokenizer_;
  int num_top_;
  std::vector<std::pair<float, int32_t>> best_;  // [num_top], best first
};

}  // namespace reprise::engine
