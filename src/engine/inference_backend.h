// InferenceBackend: one sequence's forward-pass state (its KV cache) behind one interface,
// so that generation does not care whether the reference forward pass or compiled graphs
// compute the logits.
//
// Confined to one thread.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "model/model_config.h"

namespace reprise::engine {

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  virtual const model::ModelConfig& config() const = 0;

  // Tokens held in the KV cache.
  virtual int num_tokens() const = 0;
  // The most tokens the KV cache can hold.
  virtual int capacity_tokens() const = 0;

  // Runs `tokens` at the next positions, appends their K/V, and returns the logits after the
  // last one ([vocab]; valid until the next call). Errors: InvalidArgument (empty input, a
  // token id out of range, capacity exceeded) with the state unchanged.
  virtual Result<std::span<const float>> Append(std::span<const int32_t> tokens) = 0;

  // Drops every token from position `num_tokens` on (0 empties the cache).
  // Requires: 0 <= num_tokens <= this->num_tokens().
  virtual void Truncate(int num_tokens) = 0;

  // A short name for logs and benchmarks ("reference", "cpu-graphs").
  virtual const char* name() const = 0;

  // Threads the backend computes with.
  virtual int num_threads() const { return 1; }
};

}  // namespace reprise::engine
