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
// With logprobs asked, each choice carries OpenAI's `logprobs`: for chat
//   {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}
// and for completions {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}],
// "text_offset"}; a streamed choice carries them in its last chunk (the one with its
// finish_reason), all at once.
// Text that is not valid UTF-8 (a model can emit a stray byte token) is written with U+FFFD
// in its place, never refused.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/engine.h"
#include "server/tool_calls.h"

namespace reprise::server {

enum class Endpoint { kChat, kCompletion };

// What every response and chunk of one request carries.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// The engine's stop reason as OpenAI's finish_reason: "stop" (end of generation, a stop
// sequence) or "length" (max_tokens, a full context).
std::string_view FinishReason(std::string_view stop_reason, bool stop_sequence_hit);

// Tokens of the prompt whose KV came from the cache (prefix + reused as they were).
int CachedTokens(const ReuseReport& reuse);

// One choice as answered: its text as sent (a stop sequence cut off, an echoed prompt in
// front), why it ended, and with `has_logprobs` the log-probabilities of its tokens. A NaN
// log-probability is written null (the first token of an echoed prompt: nothing precedes it).
struct ChoiceOutput {
  std::string text;
  std::string finish_reason;
  bool has_logprobs = false;
  std::vector<PositionLogprobs> logprobs;
  // Chat: the function calls read out of the reply (then `text` is what is left, null when
  // empty).
  std::vector<ToolCall> tool_calls;
};

// The entries of `logprobs` (one per generated token) for the tokens whose text was sent: a
// final end-of-generation token is dropped (its text is not in the reply), and after a stop
// sequence the tokens that begin past the `sent_bytes` bytes sent.
std::vector<PositionLogprobs> SentLogprobs(const std::vector<PositionLogprobs>& logprobs,
                                           std::string_view stop_reason, bool stop_sequence_hit,
                                           size_t sent_bytes);

// The whole non-streamed response.
std::string CompletionBody(const ResponseHeader& header, const GenerateResult& result,
                           const std::vector<ChoiceOutput>& choices, double queue_ms);

// One streamed chunk of choice `index` with `text` (the first chat chunk of a choice also
// carries the assistant role); `finish_reason` empty = not the last. `logprobs`: the choice's
// (ChoiceOutput::has_logprobs), on its last chunk only.
std::string StreamChunk(const ResponseHeader& header, int index, std::string_view text, bool first,
                        std::string_view finish_reason, const ChoiceOutput* logprobs = nullptr);

// A streamed chat chunk with one fragment of choice `index`'s call `call_index` as OpenAI
// streams calls: the first fragment of a call (`id` not empty) carries its index, id, type and
// function name with empty arguments; the next ones its index and a piece of the arguments.
std::string ToolCallFragmentChunk(const ResponseHeader& header, int index, int call_index,
                                  std::string_view id, std::string_view name,
                                  std::string_view arguments, bool first);

// The last chunk before [DONE] when stream_options.include_usage is set: no choices, `usage`
// and `reprise`.
std::string UsageChunk(const ResponseHeader& header, const GenerateResult& result, double queue_ms);

}  // namespace reprise::server
