// Sampler: picks the next token from a row of logits.
//
// Temperature 0 is greedy (argmax, lowest id on ties). Otherwise: top-k, then temperature
// softmax, then top-p (nucleus) over the survivors, then a draw from a seeded generator, so a
// given seed reproduces the same text. Thread-compatible; one per request.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/random.h"
#include "base/status.h"

namespace reprise::engine {

struct SamplerOptions {
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 40;            // 0 = no limit
  float top_p = 0.95f;       // 1 = no limit
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Errors: InvalidArgument for negative temperature/top-k or top-p outside (0, 1].
  static Result<Sampler> Create(const SamplerOptions& options);

  // Requires: logits is not empty.
  int32_t Sample(std::span<const float> logits);

  const SamplerOptions& options() const { return options_; }

 private:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

  SamplerOptions options_;
  Random rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused between calls
};

// Index of the largest value (the first one on ties). Requires: values not empty.
int32_t Argmax(std::span<const float> values);

}  // namespace reprise::engine
