#include "engine/request_segments.h"

#include <string>
#include <string_view>
#include <utility>

namespace reprise::engine {
namespace {

// "Document <id>:\n<text>", or "Document:\n<text>" without an id.
std::string TitledText(std::string_view kind, const Document& document) {
  std::string out(kind);
  if (!document.id.empty()) out += " " + document.id;
  out += ":\n";
  out += document.text;
  return out;
}

// The skills, then the documents, each a segment of its own whose text depends on nothing
// else, so that an identical one gives identical tokens (and reuses its KV) anywhere.
void AppendContext(const GenerateRequest& request, bool is_chat, tokenizer::ChatFormat format,
                   std::vector<PromptSegment>& segments) {
  const auto append = [&](std::string_view kind, std::string_view role, const Document& d) {
    if (is_chat) {
      const tokenizer::ChatMessage message{"system", TitledText(kind, d)};
      segments.push_back(
          ChatMessagesSegment(std::string(role), format, std::span(&message, 1), false));
    } else {
      segments.push_back({std::string(role), d.text + "\n\n", false, {}});
    }
  };
  for (const Document& skill : request.skills) append("Skill", "skill", skill);
  for (const Document& document : request.documents) append("Document", "document", document);
}

}  // namespace

PromptSegment ChatMessagesSegment(std::string role, tokenizer::ChatFormat format,
                                  std::span<const tokenizer::ChatMessage> messages,
                                  bool add_generation_prompt) {
  tokenizer::FormattedChat chat =
      tokenizer::FormatChatText(format, messages, add_generation_prompt);
  return {std::move(role), std::move(chat.text), true, std::move(chat.message_ranges)};
}

bool IsChatRequest(const GenerateRequest& request) {
  return request.segments.empty() && (request.chat || !request.messages.empty());
}

std::vector<PromptSegment> BuildRequestSegments(const GenerateRequest& request,
                                                tokenizer::ChatFormat format) {
  std::vector<PromptSegment> segments;
  if (!IsChatRequest(request)) {
    AppendContext(request, false, format, segments);
    if (!request.segments.empty()) {
      for (const Segment& s : request.segments) segments.push_back({s.role, s.text, false, {}});
    } else {
      segments.push_back({"prompt", request.prompt, false, {}});
    }
    return segments;
  }
  std::vector<tokenizer::ChatMessage> messages;
  for (const ChatTurn& turn : request.messages) messages.push_back({turn.role, turn.content});
  if (messages.empty()) messages.push_back({"user", request.prompt});
  size_t m = 0;
  for (; m < messages.size() && messages[m].role == "system"; ++m) {
    segments.push_back(
        ChatMessagesSegment(messages[m].role, format, std::span(&messages[m], 1), false));
  }
  AppendContext(request, true, format, segments);
  for (; m < messages.size(); ++m) {
    segments.push_back(
        ChatMessagesSegment(messages[m].role, format, std::span(&messages[m], 1), false));
  }
  segments.push_back(ChatMessagesSegment("assistant", format, {}, true));
  return segments;
}

std::vector<int32_t> EncodePrompt(const tokenizer::Tokenizer& tokenizer,
                                  std::span<const PromptSegment> segments) {
  std::vector<int32_t> tokens;
  if (tokenizer.vocab().add_bos && tokenizer.bos_id()) tokens.push_back(*tokenizer.bos_id());
  for (const PromptSegment& segment : segments) {
    const std::vector<int32_t> ids = tokenizer.Encode(segment.text, SegmentEncodeOptions(segment));
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }
  return tokens;
}

}  // namespace reprise::engine
