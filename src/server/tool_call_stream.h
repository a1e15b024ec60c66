// A chat reply's function calls read as the model writes them, so that a streamed reply sends
// OpenAI's delta.tool_calls fragments while it is generated (first the call's index, id, type
// and function name, then its arguments piece by piece) and never the call's markup as
// content. The forms are server/tool_calls.h's: <tool_call>{"name": ..., "arguments": ...}
// </tool_call> anywhere in the reply, or the whole reply one object {"name": ...,
// "arguments" | "parameters": ...} (Llama 3.x, and every reply under tool_choice "required" or
// a named function).
//
// How text is held back, and why:
//   - a reply's end that may be the start of "<tool_call>" waits for the next piece;
//   - whitespace at the start, and at the end of text, waits for text after it (ParseToolCalls
//     trims the content of a reply with calls, and a call often follows a line end);
//   - a reply that starts with '{' may be a whole-reply call: held until its "name" and the
//     key of its arguments are read (or it turns out to be text);
//   - inside a call, the arguments stream once "name" (a declared function) and "arguments"
//     (or "parameters") were read and the arguments open as an object, or at once after the
//     "arguments" key when the request fixes the function (a constrained reply may write its
//     keys in either order); a call written otherwise (keys in another order, arguments as a
//     JSON string) is read whole at its end.
// The calls and content match ParseToolCalls's on the finished reply (arguments as written,
// not re-serialized), except where streaming had to commit before the reply ended: a call
// whose arguments began to stream stays a call when the reply is cut before they end
// (max_tokens) or when text follows a whole-reply object; whitespace that began a reply
// before text stays in the content when a call comes later.
//
// Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace reprise::server {

// Something to send, in order.
struct ToolStreamEvent {
  enum class Kind {
    kContent,    // text outside calls
    kCallStart,  // a new call: call_index, id, name (arguments empty)
    kArguments,  // a piece of call call_index's arguments
  };
  Kind kind = Kind::kContent;
  std::string text;  // kContent, kArguments
  int call_index = 0;
  std::string id;    // kCallStart
  std::string name;  // kCallStart
};

class ToolCallStream {
 public:
  // `names`: the declared functions; calls of others stay content. `forced_name`: the
  // function every reply calls, when the request says (tool_choice naming it, or "required"
  // with one function): then a call whose arguments come before its name streams too.
  explicit ToolCallStream(std::vector<std::string> names, std::string forced_name = "");

  // The next piece of the reply; appends what can be sent now to *events.
  void Feed(std::string_view piece, std::vector<ToolStreamEvent>* events);

  // The reply ended: appends the rest to *events.
  void Finish(std::vector<ToolStreamEvent>* events);

  // What was sent, gathered: the content and the calls (arguments whole).
  const ToolReply& reply() const { return reply_; }

 private:
  enum class Mode {
    kStart,      // only whitespace so far (held)
    kText,       // content
    kHeader,     // in a call, before its arguments
    kArguments,  // streaming a call's arguments
    kTail,       // after the arguments, up to the call's end
    kWhole,      // a call read whole at its end
  };

  void Run(bool finishing, std::vector<ToolStreamEvent>* events);
  void EmitContent(std::string text, std::vector<ToolStreamEvent>* events);
  void StartCall(std::string name, std::vector<ToolStreamEvent>* events);
  void EmitArguments(std::string_view text, std::vector<ToolStreamEvent>* events);
  // A call read whole (kWhole, or a header that did not match) or, failing that, content.
  void EndWhole(std::string_view body, std::string_view markup,
                std::vector<ToolStreamEvent>* events);

  std::vector<std::string> names_;
  std::string forced_name_;
  Mode mode_ = Mode::kStart;
  bool tagged_ = false;     // the current call is inside <tool_call></tool_call>
  std::string pending_;     // text not yet decided
  std::string held_space_;  // whitespace waiting for text after it
  // kArguments: the JSON scanner's state.
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  ToolReply reply_;
};

}  // namespace reprise::server
