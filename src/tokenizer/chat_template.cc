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

FormattedChat FormatChatText(ChatFormat format, std::span<const ChatMessage> messages,
                             bool add_generation_prompt) {
  FormattedChat out;
  std::string& text = out.text;
  const auto append_message_text = [&](std::string_view part) {
    if (!part.empty()) out.message_ranges.push_back(TextRange{text.size(), part.size()});
    text += part;
  };
  switch (format) {
    case ChatFormat::kLlama3:
      for (const ChatMessage& message : messages) {
        text += "<|start_header_id|>";
        append_message_text(message.role);
        text += "<|end_header_id|>\n\n";
        append_message_text(Trim(message.content));
        text += "<|eot_id|>";
      }
      if (add_generation_prompt) text += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kChatMl:
      for (const ChatMessage& message : messages) {
        text += "<|im_start|>";
        append_message_text(message.role);
        text += '\n';
        append_message_text(message.content);
        text += "<|im_end|>\n";
      }
      if (add_generation_prompt) text += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kPlain:
      for (const ChatMessage& message : messages) {
        append_message_text(TitleCase(message.role));
        text += ": ";
        append_message_text(message.content);
        text += '\n';
      }
      if (add_generation_prompt) text += "Assistant:";
      break;
  }
  return out;
}

std::string FormatChat(ChatFormat format, std::span<const ChatMessage> messages,
                       bool add_generation_prompt) {
  return FormatChatText(format, messages, add_generation_prompt).text;
}

}  // namespace reprise::tokenizer
