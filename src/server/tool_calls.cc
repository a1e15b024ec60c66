#include "server/tool_calls.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "engine/json_schema.h"

namespace reprise::server {
namespace {

using nlohmann::json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string NewToolCallId() {
  thread_local std::mt19937_64 random(std::random_device{}());
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx%08llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random() & 0xffffffffu));
  return std::string("call_") + hex;
}

namespace {

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// A call object ({"name", "arguments"} or Llama's {"name", "parameters"}) of a declared
// function, or nothing.
bool ReadCall(std::string_view text, const std::vector<std::string>& names, ToolCall& call) {
  const json value = json::parse(Trim(text), nullptr, false);
  if (!value.is_object()) return false;
  auto name = value.find("name");
  if (name == value.end() || !name->is_string()) return false;
  if (std::find(names.begin(), names.end(), name->get<std::string>()) == names.end()) {
    return false;
  }
  json arguments = json::object();
  for (const char* key : {"arguments", "parameters"}) {
    if (auto it = value.find(key); it != value.end()) {
      if (it->is_string()) {  // some models write the arguments as a JSON string
        arguments = json::parse(it->get<std::string>(), nullptr, false);
        if (!arguments.is_object()) return false;
      } else if (it->is_object()) {
        arguments = *it;
      } else {
        return false;
      }
    }
  }
  call.id = NewToolCallId();
  call.name = name->get<std::string>();
  call.arguments = Dump(arguments);
  return true;
}

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

}  // namespace

std::string ToolsSystemText(const json& tools) {
  std::string text =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const json& tool : tools) text += "\n" + Dump(tool);
  text +=
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
      "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
  return text;
}

ToolReply ParseToolCalls(std::string_view text, const std::vector<std::string>& names) {
  ToolReply reply;
  // Llama 3.x: the whole reply is one call object.
  ToolCall call;
  if (ReadCall(text, names, call)) {
    reply.calls.push_back(std::move(call));
    return reply;
  }
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos) {
      reply.content += text.substr(at);
      break;
    }
    const size_t body = open + kOpen.size();
    size_t close = text.find(kClose, body);
    const size_t end = close == std::string_view::npos ? text.size() : close + kClose.size();
    if (close == std::string_view::npos) close = text.size();  // cut by max_tokens, maybe
    if (ReadCall(text.substr(body, close - body), names, call)) {
      reply.content += text.substr(at, open - at);
      reply.calls.push_back(std::move(call));
    } else {
      reply.content += text.substr(at, end - at);
    }
    at = end;
  }
  if (!reply.calls.empty()) reply.content = std::string(Trim(reply.content));
  return reply;
}

Result<std::string> RenderToolCalls(const json& tool_calls, std::string_view where) {
  if (!tool_calls.is_array()) {
    return InvalidArgumentError("'" + std::string(where) + "' must be an array");
  }
  std::string text;
  for (size_t i = 0; i < tool_calls.size(); ++i) {
    const json& call = tool_calls[i];
    const std::string at = std::string(where) + "[" + std::to_string(i) + "]";
    auto function = call.is_object() ? call.find("function") : call.end();
    if (!call.is_object() || function == call.end() || !function->is_object() ||
        !function->contains("name") || !(*function)["name"].is_string()) {
      return InvalidArgumentError("'" + at +
                                  "' must be {\"id\", \"type\": \"function\", \"function\": "
                                  "{\"name\", \"arguments\"}}");
    }
    json arguments = json::object();
    if (auto a = function->find("arguments"); a != function->end() && a->is_string()) {
      arguments = json::parse(a->get<std::string>(), nullptr, false);
      if (arguments.is_discarded()) arguments = a->get<std::string>();
    } else if (a != function->end() && !a->is_null()) {
      arguments = *a;
    }
    if (!text.empty()) text += "\n";
    // Name first, as the model writes it (a json object would sort the keys).
    text += std::string(kOpen) + "\n{\"name\": " + Dump((*function)["name"]) +
            ", \"arguments\": " + Dump(arguments) + "}\n" + std::string(kClose);
  }
  return text;
}

std::string RenderToolResult(std::string_view content) {
  return "<tool_response>\n" + std::string(content) + "\n</tool_response>";
}

Result<std::string> ToolCallSchema(const json& tools, std::string_view only) {
  json alternatives = json::array();
  // The parameters' local definitions, moved to the call schema's root where their "#/$defs/..."
  // references now point.
  json definitions = json::object();
  for (const json& tool : tools) {
    const json& function = tool["function"];
    const std::string& name = function["name"].get_ref<const std::string&>();
    if (!only.empty() && name != only) continue;
    json parameters = function.contains("parameters") && function["parameters"].is_object()
                          ? function["parameters"]
                          : json{{"type", "object"}};
    Result<engine::JsonSchema> compiled = engine::JsonSchema::Compile(parameters);
    if (!compiled.ok()) {
      return InvalidArgumentError("the parameters of tool '" + name +
                                  "': " + compiled.error().message());
    }
    for (const char* key : {"$defs", "definitions"}) {
      if (!parameters.contains(key) || !parameters[key].is_object()) continue;
      for (const auto& [def, value] : parameters[key].items()) {
        json& slot = definitions[key][def];
        if (!slot.is_null() && slot != value) {
          return InvalidArgumentError("the tools define '" + std::string(key) + "/" + def +
                                      "' differently: name them apart");
        }
        slot = value;
      }
    }
    alternatives.push_back(
        json{{"type", "object"},
             {"properties", {{"name", {{"const", name}}}, {"arguments", parameters}}},
             {"required", {"name", "arguments"}},
             {"additionalProperties", false}});
  }
  if (alternatives.empty()) {
    return InvalidArgumentError("'tool_choice' names the function '" + std::string(only) +
                                "', which is not among 'tools'");
  }
  json schema = alternatives.size() == 1 ? alternatives[0] : json{{"anyOf", alternatives}};
  for (const auto& [key, defs] : definitions.items()) schema[key] = defs;
  Result<engine::JsonSchema> compiled = engine::JsonSchema::Compile(schema);
  if (!compiled.ok())
    return InvalidArgumentError("the tools' parameters: " + compiled.error().message());
  return Dump(schema);
}

}  // namespace reprise::server
