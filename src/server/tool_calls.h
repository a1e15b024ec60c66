// OpenAI function calling on Reprise: how `tools` are shown to the model, how its reply is read
// back as `message.tool_calls`, and how earlier calls and their results are rendered in the
// conversation.
//
// The format is Qwen2.5/Qwen3's (Hermes-style), which Reprise also uses for models whose
// template has no tools of its own (the plain fallback):
//   the tools  a system turn listing each function's JSON signature inside <tools></tools>,
//              asking for calls as <tool_call>{"name": ..., "arguments": {...}}</tool_call>;
//   a call     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> in the reply;
//   a result   a user turn <tool_response>\n...\n</tool_response> (OpenAI's `tool` message).
// Replies are also read in Llama 3.x's JSON form (the whole reply one object {"name": ...,
// "parameters": {...}}). tool_choice "required" or a named function constrain the reply to
// such an object whose arguments are valid against the function's parameters (a JSON Schema in
// the subset of engine/json_schema.h), so the reply is always a valid call.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace reprise::server {

struct ToolCall {
  std::string id;         // "call_" and 24 hex digits
  std::string name;       // a declared function's
  std::string arguments;  // a JSON object, as text
};

// A new call id: "call_" and 24 hex digits.
std::string NewToolCallId();

// What the model replied: its text outside any call, and the calls, in order.
struct ToolReply {
  std::string content;
  std::vector<ToolCall> calls;
};

// The system turn that shows `tools` (OpenAI's array, already checked) to the model.
std::string ToolsSystemText(const nlohmann::json& tools);

// Reads the calls of declared functions (`names`) out of `text`; text of calls to other
// names, or that does not parse, stays content.
ToolReply ParseToolCalls(std::string_view text, const std::vector<std::string>& names);

// An assistant message's `tool_calls` (OpenAI's array) as the model wrote them. Errors:
// InvalidArgument naming the field.
Result<std::string> RenderToolCalls(const nlohmann::json& tool_calls, std::string_view where);

// A `tool` message's content as the model reads a result.
std::string RenderToolResult(std::string_view content);

// The schema a reply must follow for tool_choice "required" (any of `tools`) or a named
// function (`only` non-empty): {"name": <const>, "arguments": <parameters>}. Errors:
// InvalidArgument (no such function; parameters outside the schema subset, naming the keyword).
Result<std::string> ToolCallSchema(const nlohmann::json& tools, std::string_view only);

}  // namespace reprise::server
