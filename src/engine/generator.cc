#include "engine/generator.h"

#include <chrono>

#include "engine/token_logprobs.h"
#include "tokenizer/streaming_decoder.h"

namespace reprise::engine {
namespace {

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

Result<GenerationStats> Generate(InferenceBackend& backend, const tokenizer::Tokenizer& tokenizer,
                                 std::span<const int32_t> prompt, const GenerationOptions& options,
                                 const TextCallback& on_text, std::vector<int32_t>* generated) {
  if (prompt.empty()) return InvalidArgumentError("the prompt is empty");
  if (options.max_new_tokens < 0) return InvalidArgumentError("max new tokens must be >= 0");
  const int free_tokens = backend.capacity_tokens() - backend.num_tokens();
  if (static_cast<int64_t>(prompt.size()) > free_tokens) {
    return InvalidArgumentError("the prompt has " + std::to_string(prompt.size()) +
                                " tokens but only " + std::to_string(free_tokens) +
                                " fit in the context (" +
                                std::to_string(backend.capacity_tokens()) +
                                " tokens); shorten it or raise the context size");
  }
  REPRISE_RETURN_IF_ERROR(Sampler::Create(options.sampling));  // reject bad options first
  GenerationStats stats;
  stats.prompt_tokens = static_cast<int>(prompt.size());

  const auto start = std::chrono::steady_clock::now();
  REPRISE_ASSIGN_OR_RETURN(std::span<const float> logits, backend.Append(prompt));
  stats.prefill_ms = MillisecondsSince(start);
  REPRISE_RETURN_IF_ERROR(
      GenerateFrom(backend, tokenizer, logits, options, on_text, generated, stats));
  return stats;
}

Status GenerateFrom(InferenceBackend& backend, const tokenizer::Tokenizer& tokenizer,
                    std::span<const float> first_logits, const GenerationOptions& options,
                    const TextCallback& on_text, std::vector<int32_t>* generated,
                    GenerationStats& stats, std::vector<PositionLogprobs>* logprobs) {
  if (options.max_new_tokens < 0) return InvalidArgumentError("max new tokens must be >= 0");
  if (options.top_logprobs < 0 || options.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgumentError("top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) +
                                "], not " + std::to_string(options.top_logprobs));
  }
  REPRISE_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampling));
  LogprobScorer scorer(tokenizer, options.top_logprobs);
  tokenizer::StreamingDecoder decoder(tokenizer,
                                      tokenizer::DecodeOptions{true, options.strip_leading_space});
  std::span<const float> logits = first_logits;
  std::vector<float> masked;  // [vocab] with a constraint
  const auto start = std::chrono::steady_clock::now();
  stats.stop_reason = "length";
  for (int i = 0; i < options.max_new_tokens; ++i) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      stats.stop_reason = "cancelled";
      break;
    }
    std::span<const float> sample_from = logits;
    if (options.constraint != nullptr) {
      if (!options.constraint->Mask(logits, masked)) {
        stats.stop_reason = "no valid continuation";
        break;
      }
      sample_from = masked;
    }
    const int32_t token = sampler.Sample(sample_from);
    if (options.constraint != nullptr) {
      options.constraint->Accept(token, tokenizer.TokenPiece(token));
    }
    if (generated) generated->push_back(token);
    if (options.return_logprobs && logprobs) logprobs->push_back(scorer.Score(logits, token));
    ++stats.generated_tokens;
    if (options.stop_at_end_of_generation && tokenizer.IsEndOfGeneration(token)) {
      stats.stop_reason = "end of generation";
      break;
    }
    const std::string text = decoder.Push(token);
    if (!text.empty() && on_text && !on_text(text)) {
      stats.stop_reason = "stopped";
      break;
    }
    if (options.constraint != nullptr && options.constraint->is_finished()) {
      stats.stop_reason = "end of generation";  // the document is complete
      break;
    }
    if (i + 1 == options.max_new_tokens) break;
    if (backend.num_tokens() >= backend.capacity_tokens()) {
      stats.stop_reason = "context full";
      break;
    }
    const int32_t next[] = {token};
    REPRISE_ASSIGN_OR_RETURN(logits, backend.Append(next));
  }
  const std::string rest = decoder.Flush();
  if (!rest.empty() && on_text) on_text(rest);
  stats.decode_ms = MillisecondsSince(start);
  return Status::Ok();
}

}  // namespace reprise::engine
