// libFuzzer target for chat formatting: DetectChatFormat on any template text, and FormatChat
// in every format on any messages. The input is split at 0x00 bytes into fields: the first
// is a chat template, then role, content, role, content, ... The first byte of the template
// field also decides add_generation_prompt. Properties (a failure traps): never crash; the
// output holds every message's content (Llama 3 trims content, so its trimmed form); the
// formatted prompt encodes with parse_special on a ChatML/Llama 3-aware byte-level BPE
// vocabulary to valid ids.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/text_encoding.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace reprise::tokenizer;

const Tokenizer& ChatTokenizer() {
  static const Tokenizer* tok = [] {
    Vocab v;
    v.kind = VocabKind::kBpe;
    v.pre = "llama-bpe";
    v.add_space_prefix = false;
    for (int b = 0; b < 256; ++b) {
      v.tokens.emplace_back(ByteToGpt2Char(static_cast<uint8_t>(b)));
    }
    v.merges = {"a b"};
    v.tokens.push_back("ab");
    for (const char* special : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                                "<|eot_id|>", "<|im_start|>", "<|im_end|>"}) {
      v.tokens.push_back(special);
    }
    v.token_types.assign(v.tokens.size(), TokenType::kNormal);
    for (size_t i = v.tokens.size() - 6; i < v.tokens.size(); ++i) {
      v.token_types[i] = TokenType::kControl;
    }
    auto t = Tokenizer::Create(std::move(v));
    if (!t.ok()) std::abort();
    return std::move(t).value().release();
  }();
  return *tok;
}

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

void Trap(bool failed) {
  if (failed) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> fields;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (true) {
    const size_t zero = rest.find('\0');
    fields.push_back(rest.substr(0, zero));
    if (zero == rest.npos) break;
    rest.remove_prefix(zero + 1);
  }
  const std::string_view chat_template = fields[0];
  const bool generation_prompt = !chat_template.empty() && (chat_template[0] & 1) != 0;
  std::vector<ChatMessage> messages;
  for (size_t i = 1; i + 1 < fields.size(); i += 2) {
    messages.push_back({std::string(fields[i]), std::string(fields[i + 1])});
  }
  const ChatFormat detected = DetectChatFormat(chat_template);
  (void)ChatFormatName(detected);
  const Tokenizer& tok = ChatTokenizer();
  for (ChatFormat format : {ChatFormat::kLlama3, ChatFormat::kChatMl, ChatFormat::kPlain}) {
    const std::string prompt = FormatChat(format, messages, generation_prompt);
    for (const ChatMessage& m : messages) {
      const std::string_view content =
          format == ChatFormat::kLlama3 ? Trim(m.content) : std::string_view(m.content);
      Trap(prompt.find(content) == std::string::npos);
    }
    for (TokenId id : tok.Encode(prompt, {.add_special = true, .parse_special = true})) {
      Trap(!tok.IsValid(id));
    }
  }
  return 0;
}
