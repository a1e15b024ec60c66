#include "tokenizer/chat_template.h"

#include <algorithm>

namespace reprise::tokenizer {
namespace {

bool IsJinjaSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Jinja's `trim` filter (ASCII whitespace at both ends), which Llama 3's template applies.
std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsJinjaSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsJinjaSpace(text.back())) text.remove_suffix(1);
  return text;
}

// "user" -> "User" for the plain layout.
std::string TitleCase(std::string_view role) {
  std::string out(role);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

}  // namespace

ChatFormat DetectChatFormat(std::string_view chat_template) {
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos) {
    return ChatFormat::kLlama3;
  }
  if (chat_template.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatMl;
  return ChatFormat::kPlain;
}

ChatFormat DetectChatFormat(const Vocab& vocab) {
  if (!vocab.chat_template.empty()) return DetectChatFormat(vocab.chat_template);
  const auto has = [&](std::string_view text) {
    return std::find(vocab.tokens.begin(), vocab.tokens.end(), text) != vocab.tokens.end();
  };
  if (has("<|im_start|>") && has("<|im_end|>")) return ChatFormat::kChatMl;
  return ChatFormat::kPlain;
}

std::string_view ChatFormatName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3:
      return "llama3";
    case ChatFormat::kChatMl:
      return "chatml";
    case ChatFormat::kPlain:
      return "plain";
  }
  return "plain";
}

std::string FormatChat(ChatFormat format, std::span<const ChatMessage> messages,
                       bool add_generation_prompt) {
  std::string out;
  switch (format) {
    case ChatFormat::kLlama3:
      for (const ChatMessage& message : messages) {
        out += "<|start_header_id|>";
        out += message.role;
        out += "<|end_header_id|>\n\n";
        out += Trim(message.content);
        out += "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kChatMl:
      for (const ChatMessage& message : messages) {
        out += "<|im_start|>";
        out += message.role;
        out += '\n';
        out += message.content;
        out += "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kPlain:
      for (const ChatMessage& message : messages) {
        out += TitleCase(message.role);
        out += ": ";
        out += message.content;
        out += '\n';
      }
      if (add_generation_prompt) out += "Assistant:";
      break;
  }
  return out;
}

}  // namespace reprise::tokenizer
