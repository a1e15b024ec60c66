// Generate: the token loop — run the prompt, then sample, stream and feed back one token at
// a time until a stop condition.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/inference_backend.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "reprise/engine.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

struct GenerationOptions {
  int max_new_tokens = 128;
  SamplerOptions sampling;
  bool stop_at_end_of_generation = true;  // EOS / EOT / EOM end the reply
  // Drop the space an SPM tokenizer puts before the first word (right after BOS or a chat
  // header); keep it when continuing text.
  bool strip_leading_space = false;
  // Set (from any thread) to stop before the next token; stop reason "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // Score each generated token (token_logprobs.h) into GenerateFrom's `logprobs`, with this
  // many alternatives (0-20).
  bool return_logprobs = false;
  int top_logprobs = 0;
  // Constrained decoding: each token is sampled from the logits with the tokens this
  // constraint refuses masked out, and generation ends once its document is complete ("end
  // of generation") or no token is allowed ("no valid continuation"). Null = free text.
  // Borrowed; advanced by every token generated.
  JsonConstraint* constraint = nullptr;
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double prefill_ms = 0.0;  // time to the first token's logits (TTFT)
  double decode_ms = 0.0;   // time spent producing the following tokens
  std::string stop_reason;  // "length", "end of generation", "context full", "stopped",
                            // "cancelled"
};

// Streams text as it becomes complete (UTF-8 safe); returning false stops generation.
using TextCallback = std::function<bool(std::string_view text)>;

// Generates from `first_logits`, the logits after the last token `backend` holds (a prompt
// already run, e.g. by a ReuseSession). `stats` gets the generation figures (prefill_ms is
// left as it is); `logprobs` (with options.return_logprobs) one entry per generated token.
Status GenerateFrom(InferenceBackend& backend, const tokenizer::Tokenizer& tokenizer,
                    std::span<const float> first_logits, const GenerationOptions& options,
                    const TextCallback& on_text, std::vector<int32_t>* generated,
                    GenerationStats& stats, std::vector<PositionLogprobs>* logprobs = nullptr);

// Runs `prompt` (appended to whatever `backend` already holds) and generates.
// `generated` (optional) receives the sampled ids, including a final end-of-generation token.
// Errors: InvalidArgument (empty prompt, prompt longer than the free context, bad options),
// and the backend's errors.
Result<GenerationStats> Generate(InferenceBackend& backend, const tokenizer::Tokenizer& tokenizer,
                                 std::span<const int32_t> prompt, const GenerationOptions& options,
                                 const TextCallback& on_text,
                                 std::vector<int32_t>* generated = nullptr);

}  // namespace reprise::engine
