// Chat formatting: turns a list of chat messages into the prompt text a model was trained on.
//
// We do not run Jinja. The vocabulary's `tokenizer.chat_template` only tells which of a few
// fixed layouts the model uses (DetectChatFormat); FormatChat renders that layout:
//   kLlama3:  <|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|> ...
//             then, for a generation prompt, <|start_header_id|>assistant<|end_header_id|>\n\n
//   kChatMl:  <|im_start|>{role}\n{content}<|im_end|>\n ...  then <|im_start|>assistant\n
//             (Qwen2, Qwen2.5, Qwen3 and other ChatML models)
//   kPlain:   "System: ...\nUser: ...\nAssistant: ...\n" then "Assistant:" — readable
//             text for base models without a template.
// FormatChat never includes the BOS token: for Llama 3 the template's leading
// "<|begin_of_text|>" is the BOS that Tokenizer::Encode adds with EncodeOptions::add_special.
// Encode the result with parse_special = true so the markers become their special tokens,
// and with the ranges FormatChatText reports as EncodeOptions::literal_ranges so that the
// messages' roles and contents stay text (a user's "<|im_end|>" is not a control token).
//
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace reprise::tokenizer {

enum class ChatFormat {
  kLlama3,
  kChatMl,
  kPlain,
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", ...
  std::string content;
};

// From the Jinja source: "<|start_header_id|>" -> kLlama3, "<|im_start|>" -> kChatMl, anything
// else (including an empty template) -> kPlain.
ChatFormat DetectChatFormat(std::string_view chat_template);

// DetectChatFormat on `vocab.chat_template`; a vocabulary without a template but with both
// "<|im_start|>" and "<|im_end|>" tokens is taken as ChatML.
ChatFormat DetectChatFormat(const Vocab& vocab);

std::string_view ChatFormatName(ChatFormat format);

// Renders `messages` in `format`; with `add_generation_prompt`, appends the opening of an
// assistant turn so that the model's continuation is the reply.
std::string FormatChat(ChatFormat format, std::span<const ChatMessage> messages,
                       bool add_generation_prompt);

// A rendered chat and where the messages' own text lies in it.
struct FormattedChat {
  std::string text;
  // The bytes of `text` that came from the messages (each role and content, as rendered:
  // Llama 3's trimmed content), in order; empty ones left out. Encode them as literal.
  std::vector<TextRange> message_ranges;
};

// As FormatChat (the same text), with the messages' ranges.
FormattedChat FormatChatText(ChatFormat format, std::span<const ChatMessage> messages,
                             bool add_generation_prompt);

}  // namespace reprise::tokenizer
