// A request of the public API (reprise/engine.h) as the prompt segments the engine runs:
// the leading system messages, then each skill and each document as a segment of its own
// (identical text gives identical tokens, and reuses its KV, wherever it comes), then one
// segment per chat message and the assistant header; or, without messages, the skills and
// documents, then the given segments or the plain prompt. And a prompt's tokens as a
// ReuseSession tokenizes them (for tools that count, e.g. a benchmark's recall oracle).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/reuse_session.h"
#include "reprise/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

// `messages` rendered as one segment named `role`: the template's markers become special
// tokens, the messages' own text stays text.
PromptSegment ChatMessagesSegment(std::string role, tokenizer::ChatFormat format,
                                  std::span<const tokenizer::ChatMessage> messages,
                                  bool add_generation_prompt);

// A chat request: messages given (or `chat` set) and no explicit segments.
bool IsChatRequest(const GenerateRequest& request);

std::vector<PromptSegment> BuildRequestSegments(const GenerateRequest& request,
                                                tokenizer::ChatFormat format);

// BOS (when the vocabulary adds one), then each segment's tokens.
std::vector<int32_t> EncodePrompt(const tokenizer::Tokenizer& tokenizer,
                                  std::span<const PromptSegment> segments);

}  // namespace reprise::engine
