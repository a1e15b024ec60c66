// Builds the JSON bodies Reprise answers with, in OpenAI's shapes: chat.completion,
// text_completion, their streamed chunks (one SSE `data:` payload each) and `usage`
// (including prompt_tokens_details.cached_tokens), plus a `reprise` object per response that
// says where the prompt's KV came from:
//   {"ttft_ms", "queue_ms", "tokens_prefix", "tokens_prefix_inexact", "tokens_reused",
//    "tokens_recomputed",
//    "tokens_new", "chunks_from_memory", "chunks_from_flash", "guard_fallbacks",
//    "decode_tokens_per_second", "namespace", "found_runs"}
// found_runs: the prompt tokens that came from the cache, as [begin, end) pairs in prompt
// order (ReuseReport::found_runs), so a client can set them against its own recall oracle.
// Text that is not valid UTF-8 (a model can emit a stray byte token) is written with U+FFFD
// in its place, never refused.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "reprise/engine.h"

namespace reprise::server {

enum class Endpoint { kChat, kCompletion };

// What every response and chunk of one request carries.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;          // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;     // Unix seconds
  std::string model;
};

// The engine's stop reason as OpenAI's finish_reason: "stop" (end of generation, a stop
// sequence) or "length" (max_tokens, a full context).
std::string_view FinishReason(std::string_view stop_reason, bool stop_sequence_hit);

// Tokens of the prompt whose KV came from the cache (prefix + reused as they were).
int CachedTokens(const ReuseReport& reuse);

// The whole non-streamed response.
std::string CompletionBody(const ResponseHeader& header, const GenerateResult& result,
                           std::string_view text, std::string_view finish_reason,
                           double queue_ms);

// One streamed chunk with `text` (the first chat chunk also carries the assistant role);
// `finish_reason` empty = not the last.
std::string StreamChunk(const ResponseHeader& header, std::string_view text, bool first,
                        std::string_view finish_reason);

// The last chunk before [DONE] when stream_options.include_usage is set: no choices, `usage`
// and `reprise`.
std::string UsageChunk(const ResponseHeader& header, const GenerateResult& result,
                       double queue_ms);

}  // namespace reprise::server
