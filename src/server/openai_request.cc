#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/status.h"
#include "engine/json_schema.h"
#include "server/tool_calls.h"

namespace reprise::server {
namespace {

using nlohmann::json;

Status FieldError(std::string_view field, std::string_view what) {
  return InvalidArgumentError("'" + std::string(field) + "' " + std::string(what));
}

// Parses `body` without following it deeper than `max_depth` levels of arrays and objects:
// nlohmann's parser keeps its own stack (it does not recurse), and the callback discards what
// lies deeper, so that nothing later (copies, dump(), the destructor) recurses past the limit.
Result<json> ParseObject(std::string_view body, int max_depth) {
  bool too_deep = false;
  const json::parser_callback_t limit_depth = [&](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  json parsed;
  try {
    parsed = json::parse(body.begin(), body.end(), limit_depth, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {  // allocation failures; the parser itself does not throw
    return InvalidArgumentError(std::string("the body could not be parsed: ") + e.what());
  }
  if (parsed.is_discarded()) {
    return InvalidArgumentError("the body is not valid JSON (or not valid UTF-8)");
  }
  if (too_deep) {
    return InvalidArgumentError("the body is nested deeper than " + std::to_string(max_depth) +
                                " levels of arrays and objects");
  }
  if (!parsed.is_object()) return InvalidArgumentError("the body must be a JSON object");
  return parsed;
}

// Refuses fields outside `known`.
Status CheckKnownFields(const json& object, const std::set<std::string_view>& known,
                        std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    if (!known.contains(key)) {
      return InvalidArgumentError("unrecognized argument '" + key + "'" +
                                  (where.empty() ? "" : " in " + std::string(where)));
    }
  }
  return Status::Ok();
}

bool Has(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && !it->is_null();
}

// The member `key` of `object`, or null when it has none; a reference, never a copy (a copy
// of a client's value is as deep as the client made it).
const json& Field(const json& object, const char* key) {
  static const json kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

Result<int> IntegerField(const json& value, std::string_view field, int64_t min, int64_t max) {
  if (!value.is_number_integer()) return FieldError(field, "must be an integer");
  const int64_t v = value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX
                        ? INT64_MAX
                        : value.get<int64_t>();
  if (v < min || v > max) {
    return FieldError(field, "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                 "], not " + value.dump());
  }
  return static_cast<int>(v);
}

Result<double> NumberField(const json& value, std::string_view field, double min, double max,
                           bool min_exclusive = false) {
  if (!value.is_number()) return FieldError(field, "must be a number");
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < min || (min_exclusive && v == min) || v > max) {
    return FieldError(field, std::string("must be in ") + (min_exclusive ? "(" : "[") +
                                 json(min).dump() + ", " + json(max).dump() + "], not " +
                                 value.dump());
  }
  return v;
}

Result<bool> BoolField(const json& value, std::string_view field) {
  if (!value.is_boolean()) return FieldError(field, "must be true or false");
  return value.get<bool>();
}

Result<std::string> StringField(const json& value, std::string_view field) {
  if (!value.is_string()) return FieldError(field, "must be a string");
  return value.get<std::string>();
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
Result<std::string> ContentText(const json& content, std::string_view field) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return FieldError(field, "must be a string or an array of parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string where = std::string(field) + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return FieldError(where, "must be an object");
    REPRISE_RETURN_IF_ERROR(CheckKnownFields(part, {"type", "text"}, where));
    const json& type = Field(part, "type");
    if (!type.is_string()) return FieldError(where + ".type", "must be a string");
    if (type != "text") {
      return FieldError(
          where + ".type",
          "'" + type.get<std::string>() + "' is not supported: this model takes text parts only");
    }
    REPRISE_ASSIGN_OR_RETURN(std::string piece, StringField(Field(part, "text"), where + ".text"));
    text += piece;
  }
  return text;
}

// "documents" / "skills": [{"id": "...", "text": "..."}], both fields required.
Result<std::vector<Document>> DocumentList(const json& value, std::string_view field) {
  if (!value.is_array()) return FieldError(field, "must be an array of {id, text} objects");
  std::vector<Document> documents;
  for (size_t i = 0; i < value.size(); ++i) {
    const json& item = value[i];
    const std::string where = std::string(field) + "[" + std::to_string(i) + "]";
    if (!item.is_object()) return FieldError(where, "must be an object with 'id' and 'text'");
    REPRISE_RETURN_IF_ERROR(CheckKnownFields(item, {"id", "text"}, where));
    // The id names the document to the model ("Document <id>:") and to the app: a non-empty
    // string, always.
    Document document;
    REPRISE_ASSIGN_OR_RETURN(document.id, StringField(Field(item, "id"), where + ".id"));
    if (document.id.empty()) return FieldError(where + ".id", "must not be empty");
    REPRISE_ASSIGN_OR_RETURN(document.text, StringField(Field(item, "text"), where + ".text"));
    if (document.text.empty()) return FieldError(where + ".text", "must not be empty");
    documents.push_back(std::move(document));
  }
  return documents;
}

// OpenAI's "tools": one skill holding every function's signature (server/tool_calls.h).
Result<Document> ToolsAsSkill(const json& tools, std::vector<std::string>& names) {
  if (!tools.is_array()) return FieldError("tools", "must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& tool = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object() || Field(tool, "type") != "function" ||
        !Field(tool, "function").is_object()) {
      return FieldError(where, "must be {\"type\": \"function\", \"function\": {...}}");
    }
    const json& function = tool["function"];
    const json& name = Field(function, "name");
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      return FieldError(where + ".function.name", "must be a non-empty string");
    }
    if (Has(function, "parameters") && !function["parameters"].is_object()) {
      return FieldError(where + ".function.parameters", "must be an object (a JSON Schema)");
    }
    names.push_back(name.get<std::string>());
  }
  // The signatures as the model will read them; their depth is bounded by the parse.
  return Document{"tools", ToolsSystemText(tools)};
}

// response_format: "" for text, else the JSON Schema the reply must be valid against (checked
// here, so that a schema outside the subset is a 400 naming its keyword).
Result<std::string> ResponseFormatSchema(const json& format) {
  if (!format.is_object()) return FieldError("response_format", "must be an object");
  REPRISE_RETURN_IF_ERROR(CheckKnownFields(format, {"type", "json_schema"}, "response_format"));
  const json& type = Field(format, "type");
  if (type == "text") return std::string();
  if (type == "json_object") return std::string(R"({"type":"object"})");
  if (type != "json_schema") {
    return FieldError("response_format.type",
                      "must be \"text\", \"json_object\" or \"json_schema\"");
  }
  const json& spec = Field(format, "json_schema");
  if (!spec.is_object()) return FieldError("response_format.json_schema", "must be an object");
  REPRISE_RETURN_IF_ERROR(CheckKnownFields(spec, {"name", "description", "schema", "strict"},
                                           "response_format.json_schema"));
  REPRISE_RETURN_IF_ERROR(StringField(Field(spec, "name"), "response_format.json_schema.name"));
  if (Has(spec, "description")) {
    REPRISE_RETURN_IF_ERROR(
        StringField(spec["description"], "response_format.json_schema.description"));
  }
  if (Has(spec, "strict")) {
    REPRISE_RETURN_IF_ERROR(BoolField(spec["strict"], "response_format.json_schema.strict"));
  }
  if (!Has(spec, "schema")) return std::string(R"({"type":"object"})");
  const json& schema = spec["schema"];
  Result<engine::JsonSchema> compiled = engine::JsonSchema::Compile(schema);
  if (!compiled.ok()) {
    return FieldError("response_format.json_schema.schema", compiled.error().message());
  }
  return schema.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The fields both endpoints share.
const std::set<std::string_view>& CommonFields() {
  static const std::set<std::string_view> fields = {"model",
                                                    "max_tokens",
                                                    "max_completion_tokens",
                                                    "temperature",
                                                    "top_p",
                                                    "top_k",
                                                    "seed",
                                                    "stream",
                                                    "stream_options",
                                                    "stop",
                                                    "n",
                                                    "user",
                                                    "presence_penalty",
                                                    "frequency_penalty",
                                                    "logprobs",
                                                    "logit_bias",
                                                    "documents",
                                                    "skills"};
  return fields;
}

Status ParseCommon(const json& body, const RequestLimits& limits, ServeRequest& out) {
  GenerateRequest& g = out.generate;
  if (Has(body, "model")) {
    REPRISE_ASSIGN_OR_RETURN(out.model, StringField(body["model"], "model"));
    if (out.model.empty()) {
      return FieldError("model", "must be the served model's id, or left out; not empty");
    }
  }
  g.max_new_tokens = limits.default_max_tokens;
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    if (Has(body, field)) {
      // 0 only to score an echoed prompt (checked by the completions parser).
      REPRISE_ASSIGN_OR_RETURN(g.max_new_tokens,
                               IntegerField(body[field], field, 0, limits.max_tokens));
    }
  }
  g.temperature = 1.0f;  // OpenAI's default
  if (Has(body, "temperature")) {
    REPRISE_ASSIGN_OR_RETURN(const double t,
                             NumberField(body["temperature"], "temperature", 0.0, 2.0));
    g.temperature = static_cast<float>(t);
  }
  g.top_p = 1.0f;
  if (Has(body, "top_p")) {
    REPRISE_ASSIGN_OR_RETURN(const double p, NumberField(body["top_p"], "top_p", 0.0, 1.0, true));
    // A positive top_p below float's range (1e-300) is still positive: the smallest float,
    // which keeps the most likely token only.
    g.top_p = std::max(static_cast<float>(p), std::numeric_limits<float>::denorm_min());
  }
  g.top_k = 0;
  if (Has(body, "top_k")) {
    REPRISE_ASSIGN_OR_RETURN(g.top_k, IntegerField(body["top_k"], "top_k", 0, 1 << 24));
  }
  if (Has(body, "seed")) {
    const json& seed = body["seed"];
    if (!seed.is_number_integer()) return FieldError("seed", "must be an integer");
    g.seed = seed.is_number_unsigned() ? seed.get<uint64_t>()
                                       : static_cast<uint64_t>(seed.get<int64_t>());
  }
  if (Has(body, "stream")) {
    REPRISE_ASSIGN_OR_RETURN(out.stream, BoolField(body["stream"], "stream"));
  }
  if (Has(body, "stream_options")) {
    const json& options = body["stream_options"];
    if (!options.is_object()) return FieldError("stream_options", "must be an object");
    REPRISE_RETURN_IF_ERROR(CheckKnownFields(options, {"include_usage"}, "stream_options"));
    if (Has(options, "include_usage")) {
      REPRISE_ASSIGN_OR_RETURN(out.include_usage,
                               BoolField(options["include_usage"], "stream_options.include_usage"));
    }
  }
  if (Has(body, "stop")) {
    const json& stop = body["stop"];
    if (stop.is_string()) {
      out.stop.push_back(stop.get<std::string>());
    } else if (stop.is_array()) {
      for (const json& s : stop) {
        if (!s.is_string()) return FieldError("stop", "must be a string or an array of strings");
        out.stop.push_back(s.get<std::string>());
      }
    } else {
      return FieldError("stop", "must be a string or an array of strings");
    }
    if (static_cast<int>(out.stop.size()) > limits.max_stop_sequences) {
      return FieldError(
          "stop", "may hold at most " + std::to_string(limits.max_stop_sequences) + " sequences");
    }
    for (const std::string& s : out.stop) {
      if (s.empty()) return FieldError("stop", "must not hold an empty string");
    }
  }
  if (Has(body, "n")) {
    REPRISE_ASSIGN_OR_RETURN(g.num_choices, IntegerField(body["n"], "n", 1, kMaxChoices));
  }
  if (Has(body, "user")) REPRISE_RETURN_IF_ERROR(StringField(body["user"], "user"));
  for (const char* field : {"presence_penalty", "frequency_penalty"}) {
    if (Has(body, field)) {
      REPRISE_ASSIGN_OR_RETURN(const double v, NumberField(body[field], field, -2.0, 2.0));
      if (v != 0.0) return FieldError(field, "is not supported (only 0)");
    }
  }
  if (Has(body, "logit_bias")) {
    if (!body["logit_bias"].is_object() || !body["logit_bias"].empty()) {
      return FieldError("logit_bias", "is not supported (only {})");
    }
  }
  if (Has(body, "skills")) {
    REPRISE_ASSIGN_OR_RETURN(g.skills, DocumentList(body["skills"], "skills"));
  }
  if (Has(body, "documents")) {
    REPRISE_ASSIGN_OR_RETURN(g.documents, DocumentList(body["documents"], "documents"));
  }
  return Status::Ok();
}

Status CheckDocumentCount(const ServeRequest& out, const RequestLimits& limits) {
  const size_t count = out.generate.documents.size() + out.generate.skills.size();
  if (count > static_cast<size_t>(limits.max_documents)) {
    return InvalidArgumentError("too many documents and skills: " + std::to_string(count) +
                                " (at most " + std::to_string(limits.max_documents) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<ServeRequest> ParseChatCompletionRequest(std::string_view body_text,
                                                const RequestLimits& limits) {
  REPRISE_ASSIGN_OR_RETURN(const json body, ParseObject(body_text, limits.max_json_depth));
  std::set<std::string_view> known = CommonFields();
  known.insert({"messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
                "top_logprobs"});
  REPRISE_RETURN_IF_ERROR(CheckKnownFields(body, known, ""));
  ServeRequest out;
  REPRISE_RETURN_IF_ERROR(ParseCommon(body, limits, out));
  if (!Has(body, "messages")) return FieldError("messages", "is required");
  const json& messages = body["messages"];
  if (!messages.is_array() || messages.empty()) {
    return FieldError("messages", "must be a non-empty array");
  }
  static const std::set<std::string_view> roles = {"system", "developer", "user", "assistant",
                                                   "tool"};
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return FieldError(where, "must be an object");
    REPRISE_RETURN_IF_ERROR(
        CheckKnownFields(m, {"role", "content", "name", "tool_call_id", "tool_calls"}, where));
    REPRISE_ASSIGN_OR_RETURN(std::string role, StringField(Field(m, "role"), where + ".role"));
    if (!roles.contains(role)) {
      return FieldError(
          where + ".role",
          "must be one of system, developer, user, assistant, tool; not '" + role + "'");
    }
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    REPRISE_ASSIGN_OR_RETURN(std::string content,
                             ContentText(Field(m, "content"), where + ".content"));
    if (Has(m, "tool_calls")) {
      if (role != "assistant")
        return FieldError(where + ".tool_calls", "is for assistant messages");
      REPRISE_ASSIGN_OR_RETURN(const std::string calls,
                               RenderToolCalls(m["tool_calls"], where + ".tool_calls"));
      content += (content.empty() ? "" : "\n") + calls;
    }
    if (role == "tool") {
      if (Has(m, "tool_call_id")) {
        REPRISE_RETURN_IF_ERROR(StringField(m["tool_call_id"], where + ".tool_call_id"));
      }
      role = "user";  // a result reaches the model as the user's turn
      content = RenderToolResult(content);
    }
    out.generate.messages.push_back(ChatTurn{std::move(role), std::move(content)});
  }
  // tool_choice: "auto" (default), "none", "required", {"type": "function", "function":
  // {"name": ...}}.
  std::string choice_mode = "auto", named;
  if (Has(body, "tool_choice")) {
    const json& choice = body["tool_choice"];
    if (choice.is_string() && (choice == "auto" || choice == "none" || choice == "required")) {
      choice_mode = choice.get<std::string>();
    } else if (choice.is_object() && Field(choice, "type") == "function" &&
               Field(choice, "function").is_object() &&
               Field(choice["function"], "name").is_string()) {
      choice_mode = "named";
      named = choice["function"]["name"].get<std::string>();
    } else {
      return FieldError("tool_choice",
                        "must be \"auto\", \"none\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
  }
  const bool has_tools = Has(body, "tools") && body["tools"].is_array() && !body["tools"].empty();
  if ((choice_mode == "required" || choice_mode == "named") && !has_tools) {
    return FieldError("tool_choice", "needs 'tools'");
  }
  if (Has(body, "tools") && choice_mode != "none") {
    std::vector<std::string> names;
    REPRISE_ASSIGN_OR_RETURN(Document tools, ToolsAsSkill(body["tools"], names));
    if (has_tools) {
      out.generate.skills.insert(out.generate.skills.begin(), tools);
      out.tool_names = std::move(names);
    }
    if (choice_mode == "required" || choice_mode == "named") {
      if (Has(body, "response_format") && Field(body["response_format"], "type") != "text") {
        return FieldError("response_format",
                          "cannot be combined with tool_choice \"" + choice_mode + "\"");
      }
      Result<std::string> schema = ToolCallSchema(body["tools"], named);
      if (!schema.ok()) return FieldError("tool_choice", schema.error().message());
      out.generate.json_schema = std::move(schema).value();
      if (!named.empty()) {
        out.forced_tool = named;
      } else if (out.tool_names.size() == 1) {
        out.forced_tool = out.tool_names.front();
      }
    }
  }
  if (Has(body, "parallel_tool_calls")) {
    REPRISE_RETURN_IF_ERROR(BoolField(body["parallel_tool_calls"], "parallel_tool_calls"));
  }
  if (Has(body, "response_format")) {
    REPRISE_ASSIGN_OR_RETURN(std::string schema, ResponseFormatSchema(body["response_format"]));
    if (!schema.empty()) out.generate.json_schema = std::move(schema);
  }
  if (Has(body, "logprobs")) {
    REPRISE_ASSIGN_OR_RETURN(out.generate.return_logprobs, BoolField(body["logprobs"], "logprobs"));
  }
  if (Has(body, "top_logprobs")) {
    REPRISE_ASSIGN_OR_RETURN(out.generate.top_logprobs,
                             IntegerField(body["top_logprobs"], "top_logprobs", 0, 20));
    if (!out.generate.return_logprobs) {
      return FieldError("top_logprobs", "needs \"logprobs\": true");
    }
  }
  if (out.generate.max_new_tokens == 0) return FieldError("max_tokens", "must be >= 1");
  REPRISE_RETURN_IF_ERROR(CheckDocumentCount(out, limits));
  out.generate.chat = true;
  return out;
}

Result<ServeRequest> ParseCompletionRequest(std::string_view body_text,
                                            const RequestLimits& limits) {
  REPRISE_ASSIGN_OR_RETURN(const json body, ParseObject(body_text, limits.max_json_depth));
  std::set<std::string_view> known = CommonFields();
  known.insert({"prompt", "echo", "suffix", "best_of"});
  REPRISE_RETURN_IF_ERROR(CheckKnownFields(body, known, ""));
  ServeRequest out;
  REPRISE_RETURN_IF_ERROR(ParseCommon(body, limits, out));
  if (!Has(body, "prompt")) return FieldError("prompt", "is required");
  const json& prompt = body["prompt"];
  if (prompt.is_string()) {
    out.generate.prompt = prompt.get<std::string>();
  } else if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
    out.generate.prompt = prompt[0].get<std::string>();
  } else if (prompt.is_array()) {
    return FieldError("prompt",
                      "must be one string (token-id prompts and batches of prompts "
                      "are not supported)");
  } else {
    return FieldError("prompt", "must be a string");
  }
  if (Has(body, "echo")) {
    REPRISE_ASSIGN_OR_RETURN(const bool echo, BoolField(body["echo"], "echo"));
    out.echo = echo;
  }
  if (Has(body, "logprobs")) {
    // The sampled token's log-probability and this many alternatives (OpenAI allows 5).
    REPRISE_ASSIGN_OR_RETURN(out.generate.top_logprobs,
                             IntegerField(body["logprobs"], "logprobs", 0, 20));
    out.generate.return_logprobs = true;
    out.generate.return_prompt_logprobs = out.echo;
  }
  if (out.generate.max_new_tokens == 0 && !out.echo) {
    return FieldError("max_tokens", "must be >= 1 (0 only with echo, to score the prompt)");
  }
  if (Has(body, "suffix")) return FieldError("suffix", "is not supported");
  if (Has(body, "best_of")) REPRISE_RETURN_IF_ERROR(IntegerField(body["best_of"], "best_of", 1, 1));
  REPRISE_RETURN_IF_ERROR(CheckDocumentCount(out, limits));
  return out;
}

}  // namespace reprise::server
