#include "server/tool_call_stream.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace reprise::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The length of the longest end of `text` that is a start of `tag` (shorter than the tag).
size_t PartialTagAtEnd(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

enum class Match { kNeedMore, kMismatch, kMatched };

struct Header {
  Match match = Match::kNeedMore;
  std::string name;     // "" when the arguments come first
  size_t value_at = 0;  // where the arguments' value starts
};

// Where the object that `s` is inside of closes: its first '}' outside a string; npos if none
// yet.
size_t CloseOutsideString(std::string_view s) {
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '}') {
      return i;
    }
  }
  return std::string_view::npos;
}

// Reads `{"name": "<name>", "arguments": ` (or "parameters"), or `{"arguments": ` (the name
// after them), whitespace anywhere between.
Header MatchHeader(std::string_view s) {
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < s.size() && IsSpace(s[i])) ++i;
  };
  // 1: matched, 0: s ends inside it, -1: something else.
  const auto literal = [&](std::string_view word) {
    const size_t n = std::min(word.size(), s.size() - i);
    if (s.substr(i, n) != word.substr(0, n)) return -1;
    if (n < word.size()) return 0;
    i += n;
    return 1;
  };
  Header out;
  const auto step = [&](int result) {
    if (result < 0) out.match = Match::kMismatch;
    return result > 0;
  };
  skip_space();
  if (!step(literal("{"))) return out;
  skip_space();
  // The arguments first: their key, then the value (the name comes after them).
  const auto arguments_key = [&] {
    const size_t key_at = i;
    const int arguments = literal("\"arguments\"");
    if (arguments > 0) return 1;
    i = key_at;
    const int parameters = literal("\"parameters\"");
    if (parameters > 0) return 1;
    return arguments < 0 && parameters < 0 ? -1 : 0;
  };
  {
    const size_t key_at = i;
    const int first = arguments_key();
    if (first > 0) {
      skip_space();
      if (!step(literal(":"))) return out;
      skip_space();
      if (i == s.size()) return out;
      out.match = Match::kMatched;
      out.value_at = i;
      return out;
    }
    if (first == 0) return out;  // s ends inside what may still be that key
    i = key_at;
  }
  if (!step(literal("\"name\""))) return out;
  skip_space();
  if (!step(literal(":"))) return out;
  skip_space();
  if (i == s.size()) return out;
  if (s[i] != '"') {
    out.match = Match::kMismatch;
    return out;
  }
  size_t end = i + 1;
  for (bool escaped = false; end < s.size(); ++end) {
    if (escaped) {
      escaped = false;
    } else if (s[end] == '\\') {
      escaped = true;
    } else if (s[end] == '"') {
      break;
    }
  }
  if (end == s.size()) return out;
  const nlohmann::json name = nlohmann::json::parse(s.substr(i, end + 1 - i), nullptr, false);
  if (!name.is_string()) {
    out.match = Match::kMismatch;
    return out;
  }
  i = end + 1;
  skip_space();
  if (!step(literal(","))) return out;
  skip_space();
  if (!step(arguments_key())) return out;
  skip_space();
  if (!step(literal(":"))) return out;
  skip_space();
  if (i == s.size()) return out;
  out.match = Match::kMatched;
  out.name = name.get<std::string>();
  out.value_at = i;
  return out;
}

}  // namespace

ToolCallStream::ToolCallStream(std::vector<std::string> names, std::string forced_name)
    : names_(std::move(names)), forced_name_(std::move(forced_name)) {}

void ToolCallStream::Feed(std::string_view piece, std::vector<ToolStreamEvent>* events) {
  pending_ += piece;
  Run(/*finishing=*/false, events);
}

void ToolCallStream::Finish(std::vector<ToolStreamEvent>* events) {
  Run(/*finishing=*/true, events);
  // Whitespace left at the end is content only in a reply without calls (ParseToolCalls trims
  // the content around calls).
  if (reply_.calls.empty() && !held_space_.empty()) {
    reply_.content += held_space_;
    events->push_back({ToolStreamEvent::Kind::kContent, std::move(held_space_), 0, "", ""});
  }
  held_space_.clear();
}

void ToolCallStream::EmitContent(std::string text, std::vector<ToolStreamEvent>* events) {
  // Whitespace at the end waits for text after it; before a call it is dropped.
  text = held_space_ + text;
  if (reply_.content.empty() && !reply_.calls.empty()) {
    // Content that follows a call's starts at its first non-space (the content is trimmed).
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t\r\n")));
  }
  size_t body = text.size();
  while (body > 0 && IsSpace(text[body - 1])) --body;
  held_space_ = text.substr(body);
  if (body == 0) return;
  text.resize(body);
  reply_.content += text;
  events->push_back({ToolStreamEvent::Kind::kContent, std::move(text), 0, "", ""});
}

void ToolCallStream::StartCall(std::string name, std::vector<ToolStreamEvent>* events) {
  ToolCall call{NewToolCallId(), std::move(name), ""};
  events->push_back({ToolStreamEvent::Kind::kCallStart, "", static_cast<int>(reply_.calls.size()),
                     call.id, call.name});
  reply_.calls.push_back(std::move(call));
}

void ToolCallStream::EmitArguments(std::string_view text, std::vector<ToolStreamEvent>* events) {
  if (text.empty()) return;
  reply_.calls.back().arguments += text;
  events->push_back({ToolStreamEvent::Kind::kArguments, std::string(text),
                     static_cast<int>(reply_.calls.size()) - 1, "", ""});
}

void ToolCallStream::EndWhole(std::string_view body, std::string_view markup,
                              std::vector<ToolStreamEvent>* events) {
  ToolReply whole = ParseToolCalls(body, names_);
  if (whole.calls.size() == 1 && whole.content.empty()) {
    StartCall(whole.calls[0].name, events);
    reply_.calls.back().id = whole.calls[0].id;
    events->back().id = whole.calls[0].id;
    EmitArguments(whole.calls[0].arguments, events);
  } else {
    EmitContent(std::string(markup), events);
  }
}

void ToolCallStream::Run(bool finishing, std::vector<ToolStreamEvent>* events) {
  while (true) {
    switch (mode_) {
      case Mode::kStart: {
        const size_t first = pending_.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) {
          if (!finishing) return;
          held_space_ += pending_;
          pending_.clear();
          return;
        }
        held_space_ += pending_.substr(0, first);
        pending_.erase(0, first);
        if (pending_.front() == '{') {
          mode_ = Mode::kHeader;
          tagged_ = false;
        } else {
          mode_ = Mode::kText;
        }
        break;
      }
      case Mode::kText: {
        const size_t open = pending_.find(kOpen);
        if (open != std::string::npos) {
          EmitContent(pending_.substr(0, open), events);
          pending_.erase(0, open + kOpen.size());
          mode_ = Mode::kHeader;
          tagged_ = true;
          break;
        }
        const size_t keep = finishing ? 0 : PartialTagAtEnd(pending_, kOpen);
        EmitContent(pending_.substr(0, pending_.size() - keep), events);
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      case Mode::kHeader: {
        const Header header = MatchHeader(pending_);
        // The arguments before the name: streamed only when the name is known already.
        const std::string& name = header.name.empty() ? forced_name_ : header.name;
        const bool declared = std::find(names_.begin(), names_.end(), name) != names_.end();
        if (header.match == Match::kMatched && declared && pending_[header.value_at] == '{') {
          StartCall(name, events);
          pending_.erase(0, header.value_at);
          depth_ = 0;
          in_string_ = escaped_ = false;
          mode_ = Mode::kArguments;
        } else if (header.match == Match::kNeedMore && !finishing) {
          return;
        } else {
          mode_ = Mode::kWhole;
        }
        break;
      }
      case Mode::kArguments: {
        size_t i = 0;
        bool closed = false;
        for (; i < pending_.size() && !closed; ++i) {
          const char c = pending_[i];
          if (in_string_) {
            if (escaped_) {
              escaped_ = false;
            } else if (c == '\\') {
              escaped_ = true;
            } else if (c == '"') {
              in_string_ = false;
            }
          } else if (c == '"') {
            in_string_ = true;
          } else if (c == '{' || c == '[') {
            ++depth_;
          } else if (c == '}' || c == ']') {
            closed = --depth_ == 0;
          }
        }
        EmitArguments(std::string_view(pending_).substr(0, i), events);
        pending_.erase(0, i);
        if (!closed) return;  // cut short when finishing: the call stays (its pieces were sent)
        mode_ = Mode::kTail;
        break;
      }
      case Mode::kTail: {
        if (tagged_) {
          const size_t close = pending_.find(kClose);
          if (close == std::string::npos) {
            if (finishing) pending_.clear();
            return;
          }
          pending_.erase(0, close + kClose.size());
        } else {
          // A whole-reply object (its name may follow the arguments): its closing brace, then
          // whatever follows is content.
          const size_t brace = CloseOutsideString(pending_);
          if (brace == std::string::npos) {
            if (finishing) pending_.clear();
            return;
          }
          pending_.erase(0, brace + 1);
        }
        mode_ = Mode::kText;
        break;
      }
      case Mode::kWhole: {
        if (tagged_) {
          const size_t close = pending_.find(kClose);
          if (close == std::string::npos && !finishing) return;
          const size_t end = close == std::string::npos ? pending_.size() : close + kClose.size();
          const std::string body = pending_.substr(0, std::min(close, pending_.size()));
          const std::string markup = std::string(kOpen) + pending_.substr(0, end);
          pending_.erase(0, end);
          mode_ = Mode::kText;
          EndWhole(body, markup, events);
        } else {
          if (!finishing) return;  // the whole reply is the call, or text
          const std::string body = pending_;
          pending_.clear();
          mode_ = Mode::kText;
          EndWhole(body, body, events);
        }
        break;
      }
    }
  }
}

}  // namespace reprise::server
