#include "cli/bench_serve.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <thread>
#include <tuple>
#include <utility>

#include "base/check.h"
#include "server/tool_calls.h"
#include "tools/request_recall_oracle.h"

namespace reprise::cli {
namespace {

using nlohmann::json;

// Bodies kept in memory when they are not a stream: an error message or a whole response.
constexpr size_t kMaxBodyBytes = 64u << 20;

// ----- JSON reading without exceptions: every access checks the type first.

const json* Find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json* FindObject(const json& object, const char* key) {
  const json* value = Find(object, key);
  return value != nullptr && value->is_object() ? value : nullptr;
}

const std::string* FindString(const json& object, const char* key) {
  const json* value = Find(object, key);
  return value != nullptr && value->is_string() ? &value->get_ref<const std::string&>() : nullptr;
}

// A number as an int64_t (clamped, truncated); false for anything else.
bool ToInt(const json& value, int64_t* out) {
  if (!value.is_number()) return false;
  if (value.is_number_integer()) {
    *out = value.is_number_unsigned()
               ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT64_MAX))
               : value.get<int64_t>();
    return true;
  }
  const double d = value.get<double>();  // finite: JSON has no NaN or infinity
  *out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d);
  return true;
}

void ReadInt(const json& object, const char* key, int64_t* out) {
  if (const json* value = Find(object, key)) ToInt(*value, out);
}

// [[begin, end], ...] with 0 <= begin <= end; nullopt for anything else.
std::optional<std::vector<std::pair<int64_t, int64_t>>> ReadRuns(const json& value) {
  if (!value.is_array()) return std::nullopt;
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const json& run : value) {
    int64_t begin = -1, end = -1;
    if (!run.is_array() || run.size() != 2 || !ToInt(run[0], &begin) || !ToInt(run[1], &end) ||
        begin < 0 || end < begin) {
      return std::nullopt;
    }
    runs.emplace_back(begin, end);
  }
  return runs;
}

void ReadDouble(const json& object, const char* key, double* out) {
  const json* value = Find(object, key);
  if (value != nullptr && value->is_number()) *out = value->get<double>();
}

// choices[0] when it is an object.
const json* FirstChoice(const json& response) {
  const json* choices = Find(response, "choices");
  if (choices == nullptr || !choices->is_array() || choices->empty()) return nullptr;
  const json& first = (*choices)[0];
  return first.is_object() ? &first : nullptr;
}

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                           text.front() == '\r')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
                           text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string DescribeError(const json& error) {
  if (error.is_string()) return error.get_ref<const std::string&>();
  std::string text;
  if (const std::string* type = FindString(error, "type")) text += *type;
  if (const json* code = Find(error, "code"); code != nullptr && !code->is_null()) {
    text += (text.empty() ? "(" : " (") + (code->is_string() ? code->get_ref<const std::string&>()
                                                             : Dump(*code)) + ")";
  }
  if (const std::string* message = FindString(error, "message")) {
    text += (text.empty() ? "" : ": ") + *message;
  }
  return text.empty() ? Dump(error) : text;
}

Status HttpError(int status, std::string_view what, std::string_view body) {
  std::string message = "HTTP " + std::to_string(status) + " from " + std::string(what) + ": " +
                        DescribeErrorBody(body);
  return status < 500 ? InvalidArgumentError(std::move(message))
                      : UnavailableError(std::move(message));
}

}  // namespace

// ----- SseParser

void SseParser::Feed(std::string_view bytes, const EventFn& on_event) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the '\n' of a "\r\n"
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      ProcessLine(on_event);
    } else {
      line_ += c;
    }
  }
}

void SseParser::Finish(const EventFn& on_event) {
  if (!line_.empty()) ProcessLine(on_event);
  Dispatch(on_event);
  after_cr_ = false;
}

void SseParser::ProcessLine(const EventFn& on_event) {
  if (line_.empty()) {
    Dispatch(on_event);
    return;
  }
  if (line_.front() != ':') {  // ':' starts a comment
    const std::string_view line = line_;
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data_) data_ += '\n';
      data_ += value;
      has_data_ = true;
    } else if (field == "event") {
      event_ = value;
    }
  }
  line_.clear();
}

void SseParser::Dispatch(const EventFn& on_event) {
  if (has_data_) on_event({std::move(event_), std::move(data_)});
  event_.clear();
  data_.clear();
  has_data_ = false;
}

// ----- ChatStream

void ReadUsage(const json& response, ServeUsage* usage) {
  if (const json* u = FindObject(response, "usage")) {
    ReadInt(*u, "prompt_tokens", &usage->prompt_tokens);
    ReadInt(*u, "completion_tokens", &usage->completion_tokens);
    if (const json* details = FindObject(*u, "prompt_tokens_details")) {
      ReadInt(*details, "cached_tokens", &usage->cached_tokens);
    }
  }
  if (const json* r = FindObject(response, "reprise")) {
    usage->has_reprise = true;
    ReadDouble(*r, "ttft_ms", &usage->server_ttft_ms);
    ReadInt(*r, "tokens_prefix", &usage->tokens_prefix);
    ReadInt(*r, "tokens_prefix_inexact", &usage->tokens_prefix_inexact);
    ReadInt(*r, "tokens_reused", &usage->tokens_reused);
    ReadInt(*r, "tokens_recomputed", &usage->tokens_recomputed);
    ReadInt(*r, "tokens_stable", &usage->tokens_stable);
    ReadInt(*r, "tokens_new", &usage->tokens_new);
    ReadInt(*r, "chunks_from_memory", &usage->chunks_from_memory);
    ReadInt(*r, "chunks_from_flash", &usage->chunks_from_flash);
    ReadDouble(*r, "decode_tokens_per_second", &usage->server_decode_tokens_per_second);
    if (const std::string* name = FindString(*r, "namespace")) usage->reprise_namespace = *name;
    if (const json* value = Find(*r, "found_runs")) {
      if (auto runs = ReadRuns(*value)) {
        usage->has_found_runs = true;
        usage->found_runs = std::move(*runs);
      }
    }
  }
  if (const json* t = FindObject(response, "timings")) {
    usage->has_timings = true;
    ReadDouble(*t, "prompt_ms", &usage->timings_prompt_ms);
    ReadInt(*t, "prompt_n", &usage->timings_prompt_n);
    ReadInt(*t, "cache_n", &usage->timings_cache_n);
    ReadDouble(*t, "predicted_per_second", &usage->timings_predicted_per_second);
  }
}

int64_t PromptTokensOf(const ServeUsage& usage) {
  if (usage.prompt_tokens >= 0) return usage.prompt_tokens;
  if (usage.timings_prompt_n >= 0 && usage.timings_cache_n >= 0) {
    return usage.timings_prompt_n + usage.timings_cache_n;
  }
  return -1;
}

int64_t CachedTokensOf(const ServeUsage& usage) {
  return usage.cached_tokens >= 0 ? usage.cached_tokens : usage.timings_cache_n;
}

std::string DescribeErrorBody(std::string_view body) {
  json parsed = json::parse(body, nullptr, false);
  if (const json* error = Find(parsed, "error")) return DescribeError(*error);
  std::string text(Trim(body.substr(0, 200)));
  return text.empty() ? "(empty body)" : text;
}

void ChatStream::OnEventData(std::string_view data, double now_ms) {
  data = Trim(data);
  if (data == "[DONE]") {
    saw_done_ = true;
    return;
  }
  OnJson(data, now_ms, /*streamed=*/true);
}

void ChatStream::OnWholeBody(std::string_view body, double now_ms) {
  OnJson(body, now_ms, /*streamed=*/false);
}

void ChatStream::OnJson(std::string_view text, double now_ms, bool streamed) {
  json chunk = json::parse(text, nullptr, false);
  if (!chunk.is_object()) {
    ++num_malformed_events_;
    return;
  }
  if (const json* error = Find(chunk, "error")) {
    error_message_ = DescribeError(*error);
    return;
  }
  OnChunk(chunk, now_ms, streamed);
}

void ChatStream::OnChunk(const json& chunk, double now_ms, bool streamed) {
  ReadUsage(chunk, &usage_);
  const json* choice = FirstChoice(chunk);
  if (choice == nullptr) return;
  const std::string* content = nullptr;
  if (const json* holder = FindObject(*choice, streamed ? "delta" : "message")) {
    content = FindString(*holder, "content");
  }
  if (content == nullptr) content = FindString(*choice, "text");  // /v1/completions style
  std::string calls;  // a streamed tool call's pieces also count as generated text
  if (const json* holder = FindObject(*choice, streamed ? "delta" : "message")) {
    if (const json* tool_calls = Find(*holder, "tool_calls");
        tool_calls && tool_calls->is_array()) {
      for (const json& call : *tool_calls) {
        if (const json* function = FindObject(call, "function")) {
          if (const std::string* name = FindString(*function, "name")) calls += *name;
          if (const std::string* arguments = FindString(*function, "arguments"))
            calls += *arguments;
        }
      }
    }
  }
  if ((content == nullptr || content->empty()) && calls.empty()) return;
  if (content != nullptr) reply_ += *content;
  reply_ += calls;
  ++num_content_chunks_;
  if (first_content_ms_ < 0) first_content_ms_ = now_ms;
  last_content_ms_ = now_ms;
}

// ----- Requests

Result<DocumentsMode> ParseDocumentsMode(std::string_view name) {
  if (name == "auto") return DocumentsMode::kAuto;
  if (name == "field") return DocumentsMode::kField;
  if (name == "inline") return DocumentsMode::kInline;
  return InvalidArgumentError("unknown documents mode '" + std::string(name) +
                              "' (known: auto, field, inline)");
}

Result<ServeEndpoint> ParseServeEndpoint(std::string_view name) {
  if (name == "chat") return ServeEndpoint::kChat;
  if (name == "completions") return ServeEndpoint::kCompletions;
  return InvalidArgumentError("unknown endpoint '" + std::string(name) +
                              "' (known: chat, completions)");
}

std::string_view ServeEndpointName(ServeEndpoint endpoint) {
  return endpoint == ServeEndpoint::kChat ? "chat" : "completions";
}

std::string_view ServeEndpointPath(ServeEndpoint endpoint) {
  return endpoint == ServeEndpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string_view DocumentsModeName(DocumentsMode mode) {
  switch (mode) {
    case DocumentsMode::kAuto:
      return "auto";
    case DocumentsMode::kField:
      return "field";
    case DocumentsMode::kInline:
      return "inline";
  }
  return "?";
}

namespace {

// "Document <id>:\n<text>", as the engine titles a document (engine/request_segments.cc).
std::string Titled(std::string_view kind, const workload::TraceText& item) {
  std::string out(kind);
  if (!item.id.empty()) out += " " + item.id;
  return out + ":\n" + item.text;
}

// The skills, then the documents, titled, in the order the engine places them; the tools
// first of all, the skill that Reprise's server makes of `tools` (server/openai_request.h).
std::vector<std::string> TitledContext(const workload::TraceRequest& request) {
  std::vector<std::string> texts;
  if (!request.tools.empty()) {
    texts.push_back(
        Titled("Skill", {"tools", server::ToolsSystemText(TraceToolsJson(request.tools))}));
  }
  for (const workload::TraceText& s : request.skills) texts.push_back(Titled("Skill", s));
  for (const workload::TraceText& d : request.documents) texts.push_back(Titled("Document", d));
  return texts;
}

// An assistant message's calls as OpenAI's `tool_calls`.
json ToolCallsJson(const std::vector<workload::TraceToolCall>& calls) {
  json array = json::array();
  for (const workload::TraceToolCall& call : calls) {
    array.push_back({{"id", call.id},
                     {"type", "function"},
                     {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  return array;
}

// A message as OpenAI's API carries it: assistant calls as `tool_calls`, results as `tool`
// messages naming their call.
json FieldMessage(const workload::TraceMessage& message) {
  json out = {{"role", message.role}, {"content", message.content}};
  if (!message.tool_calls.empty()) {
    if (message.content.empty()) out["content"] = nullptr;
    out["tool_calls"] = ToolCallsJson(message.tool_calls);
  }
  if (message.role == "tool") out["tool_call_id"] = message.tool_call_id;
  return out;
}

}  // namespace

workload::TraceMessage InlineMessage(const workload::TraceMessage& message) {
  workload::TraceMessage out{message.role, message.content, {}, ""};
  if (!message.tool_calls.empty()) {
    Result<std::string> calls =
        server::RenderToolCalls(ToolCallsJson(message.tool_calls), "tool_calls");
    // The calls are built above in the form RenderToolCalls reads.
    REPRISE_CHECK(calls.ok()) << calls.error().ToString();
    out.content += (out.content.empty() ? "" : "\n") + *calls;
  }
  if (message.role == "tool") {
    out.role = "user";
    out.content = server::RenderToolResult(message.content);
  }
  return out;
}

json TraceToolsJson(const std::vector<workload::TraceTool>& tools) {
  json array = json::array();
  const json parameters = json::parse(workload::kAgentToolParameters);
  for (const workload::TraceTool& tool : tools) {
    array.push_back(
        {{"type", "function"},
         {"function",
          {{"name", tool.name}, {"description", tool.description}, {"parameters", parameters}}}});
  }
  return array;
}

namespace {

// The fields every request body shares.
void AddCommonFields(const workload::TraceRequest& request, const ChatBodyOptions& options,
                     json& body) {
  body["max_tokens"] = request.max_tokens > 0 ? request.max_tokens : options.max_tokens;
  body["temperature"] = 0;
  body["seed"] = options.seed;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
}

}  // namespace

json BuildChatBody(const workload::TraceRequest& request,
                   const std::vector<workload::TraceMessage>& messages,
                   const ChatBodyOptions& options) {
  json body = json::object();
  if (!options.model.empty()) body["model"] = options.model;
  json out_messages = json::array();
  const bool is_inline = options.documents == DocumentsMode::kInline;
  size_t m = 0;
  for (; m < messages.size() && messages[m].role == "system"; ++m) {
    out_messages.push_back({{"role", "system"}, {"content", messages[m].content}});
  }
  if (is_inline) {
    // Where the engine puts the `documents` and `skills` fields, as it renders them.
    for (std::string& text : TitledContext(request)) {
      out_messages.push_back({{"role", "system"}, {"content", std::move(text)}});
    }
  }
  for (; m < messages.size(); ++m) {
    if (is_inline) {
      const workload::TraceMessage rendered = InlineMessage(messages[m]);
      out_messages.push_back({{"role", rendered.role}, {"content", rendered.content}});
    } else {
      out_messages.push_back(FieldMessage(messages[m]));
    }
  }
  auto texts = [](const std::vector<workload::TraceText>& items) {
    json array = json::array();
    for (const workload::TraceText& item : items) {
      array.push_back({{"id", item.id}, {"text", item.text}});
    }
    return array;
  };
  if (!is_inline) {
    if (!request.documents.empty()) body["documents"] = texts(request.documents);
    if (!request.skills.empty()) body["skills"] = texts(request.skills);
    if (!request.tools.empty()) body["tools"] = TraceToolsJson(request.tools);
  }
  body["messages"] = std::move(out_messages);
  AddCommonFields(request, options, body);
  return body;
}

std::string PlainPrompt(const workload::TraceRequest& request,
                        const std::vector<workload::TraceMessage>& messages) {
  std::string text;
  const auto add_line = [&text](std::string_view line) {
    text += line;
    if (!line.ends_with('\n')) text += '\n';
  };
  size_t m = 0;
  for (; m < messages.size() && messages[m].role == "system"; ++m) add_line(messages[m].content);
  for (const std::string& block : TitledContext(request)) text += block + "\n\n";
  for (; m < messages.size(); ++m) {
    const std::string content = InlineMessage(messages[m]).content;
    if (m + 1 == messages.size()) {
      text += content;
    } else {
      add_line(content);
    }
  }
  return text;
}

json BuildCompletionBody(const workload::TraceRequest& request,
                         const std::vector<workload::TraceMessage>& messages,
                         const ChatBodyOptions& options) {
  json body = json::object();
  if (!options.model.empty()) body["model"] = options.model;
  body["prompt"] = PlainPrompt(request, messages);
  AddCommonFields(request, options, body);
  return body;
}

RequestMeasurement Measure(const ChatStream& stream, double start_ms, double end_ms) {
  RequestMeasurement m;
  m.latency_ms = end_ms - start_ms;
  if (stream.first_content_ms() >= 0) m.ttft_ms = stream.first_content_ms() - start_ms;
  m.num_content_chunks = stream.num_content_chunks();
  m.num_malformed_events = stream.num_malformed_events();
  m.reply = stream.reply();
  m.usage = stream.usage();
  const int64_t tokens = m.usage.completion_tokens >= 0 ? m.usage.completion_tokens
                                                        : stream.num_content_chunks();
  const double decode_ms = stream.last_content_ms() - stream.first_content_ms();
  if (tokens >= 2 && stream.first_content_ms() >= 0 && decode_ms > 0) {
    m.decode_tokens_per_second = static_cast<double>(tokens - 1) / (decode_ms / 1000.0);
  }
  return m;
}

// ----- ServeClient

ServeClient::ServeClient(ServeClientOptions options, std::string prefix,
                         std::unique_ptr<httplib::Client> http)
    : options_(std::move(options)), prefix_(std::move(prefix)), http_(std::move(http)) {}

ServeClient::~ServeClient() = default;

Result<std::unique_ptr<ServeClient>> ServeClient::Create(ServeClientOptions options) {
  constexpr std::string_view kScheme = "http://";
  std::string_view rest = options.url;
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("bad --url '" + options.url + "': " + std::string(why) +
                                " (expected http://host[:port][/prefix])");
  };
  if (rest.starts_with("https://")) return bad("https is not supported (no TLS in this build)");
  if (!rest.starts_with(kScheme)) return bad("not an http:// URL");
  rest.remove_prefix(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string prefix(slash == std::string_view::npos ? std::string_view() : rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  int port = 80;
  std::string_view host = authority;
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    host = authority.substr(0, colon);
    const std::string_view digits = authority.substr(colon + 1);
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (error != std::errc() || end != digits.data() + digits.size() || port < 1 ||
        port > 65535) {
      return bad("the port is not a number in 1..65535");
    }
  }
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.empty()) return bad("no host");

  auto http = std::make_unique<httplib::Client>(std::string(host), port);
  http->set_connection_timeout(10, 0);
  const auto timeout_s = static_cast<time_t>(std::max(1.0, options.timeout_s));
  http->set_read_timeout(timeout_s, 0);
  http->set_write_timeout(timeout_s, 0);
  httplib::Headers headers;
  if (!options.api_key.empty()) headers.emplace("Authorization", "Bearer " + options.api_key);
  http->set_default_headers(std::move(headers));
  return std::unique_ptr<ServeClient>(
      new ServeClient(std::move(options), std::move(prefix), std::move(http)));
}

double ServeClient::Now() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Result<ModelInfo> ServeClient::FindModel(std::string_view wanted) {
  const std::string path = prefix_ + "/v1/models";
  httplib::Result result = http_->Get(path);
  if (!result) {
    return UnavailableError("cannot reach " + options_.url + " (GET " + path +
                            "): " + httplib::to_string(result.error()));
  }
  if (result->status >= 400) return HttpError(result->status, "GET " + path, result->body);
  json list = json::parse(result->body, nullptr, false);
  const json* data = Find(list, "data");
  if (data == nullptr || !data->is_array() || data->empty()) {
    return CorruptError("GET " + path + " returned no model list ('data' array)");
  }
  for (const json& entry : *data) {
    const std::string* id = FindString(entry, "id");
    if (id == nullptr || (!wanted.empty() && *id != wanted)) continue;
    ModelInfo info;
    info.id = *id;
    if (const std::string* owner = FindString(entry, "owned_by")) info.owned_by = *owner;
    int64_t context = 0;
    for (const char* key : {"context_tokens", "context_length", "max_model_len"}) {
      ReadInt(entry, key, &context);
    }
    if (const json* meta = FindObject(entry, "meta")) ReadInt(*meta, "n_ctx", &context);
    info.context_tokens = static_cast<int>(std::clamp<int64_t>(context, 0, INT32_MAX));
    return info;
  }
  return NotFoundError("the server at " + options_.url + " lists no model '" +
                       std::string(wanted) + "'");
}

Result<RequestMeasurement> ServeClient::Send(const json& body, ServeEndpoint endpoint) {
  const std::string path = prefix_ + std::string(ServeEndpointPath(endpoint));
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = Dump(body);
  request.set_header("Content-Type", "application/json");
  request.set_header("Accept", "text/event-stream");

  int status = 0;
  bool is_stream = false;
  std::string raw;  // an error or a whole JSON body
  SseParser parser;
  ChatStream stream;
  request.response_handler = [&](const httplib::Response& response) {
    status = response.status;
    is_stream = response.get_header_value("Content-Type").find("text/event-stream") !=
                std::string::npos;
    return true;
  };
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    if (status < 400 && is_stream) {
      const double now = Now();
      parser.Feed({data, size},
                  [&](SseEvent event) { stream.OnEventData(event.data, now); });
      return true;
    }
    if (raw.size() + size > kMaxBodyBytes) return false;
    raw.append(data, size);
    return true;
  };
  const double start_ms = Now();
  httplib::Result result = http_->send(request);
  const double end_ms = Now();
  if (!result) {
    return UnavailableError("cannot complete POST " + path + " at " + options_.url + ": " +
                            httplib::to_string(result.error()));
  }
  if (status >= 400) return HttpError(status, "POST " + path, raw);
  if (is_stream) {
    parser.Finish([&](SseEvent event) { stream.OnEventData(event.data, end_ms); });
  } else {
    stream.OnWholeBody(raw, end_ms);
  }
  if (!stream.error_message().empty()) {
    return UnavailableError("the server reported an error in its response: " +
                            stream.error_message());
  }
  if (stream.num_content_chunks() == 0 && stream.usage().completion_tokens < 0) {
    return CorruptError("POST " + path + " returned neither content nor usage (" +
                        std::to_string(stream.num_malformed_events()) +
                        " malformed events; " + (is_stream ? "a stream" : "not a stream") + ")");
  }
  return Measure(stream, start_ms, end_ms);
}

// ----- Figures

TimeSummary SummarizeTimes(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !(v >= 0); });
  TimeSummary summary;
  summary.count = static_cast<int>(values.size());
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  summary.mean = sum / static_cast<double>(values.size());
  auto percentile = [&](double p) {
    const double rank = p * static_cast<double>(values.size() - 1);
    const size_t low = static_cast<size_t>(std::floor(rank));
    const size_t high = std::min(low + 1, values.size() - 1);
    return values[low] + (values[high] - values[low]) * (rank - static_cast<double>(low));
  };
  summary.p50 = percentile(0.5);
  summary.p90 = percentile(0.9);
  return summary;
}

std::vector<PhaseSummary> SummarizeServeBench(const std::vector<RequestMeasurement>& requests) {
  std::vector<PhaseSummary> phases;
  for (const RequestMeasurement& r : requests) {
    auto it = std::find_if(phases.begin(), phases.end(),
                           [&](const PhaseSummary& p) { return p.phase == r.phase; });
    if (it == phases.end()) {
      phases.push_back({.phase = r.phase});
      it = phases.end() - 1;
    }
  }
  for (PhaseSummary& phase : phases) {
    std::vector<double> ttft, latency, decode;
    bool all_found = true, all_cached = true;
    auto add = [](int64_t value, int64_t* sum) {
      if (value >= 0) *sum = (*sum < 0 ? 0 : *sum) + value;
    };
    for (const RequestMeasurement& r : requests) {
      if (r.phase != phase.phase) continue;
      ++phase.num_requests;
      ttft.push_back(r.ttft_ms);
      latency.push_back(r.latency_ms);
      decode.push_back(r.decode_tokens_per_second);
      const ServeUsage& u = r.usage;
      add(u.prompt_tokens, &phase.prompt_tokens);
      add(u.completion_tokens, &phase.completion_tokens);
      add(u.cached_tokens, &phase.cached_tokens);
      add(u.tokens_prefix, &phase.tokens_prefix);
      add(u.tokens_prefix_inexact, &phase.tokens_prefix_inexact);
      add(u.tokens_reused, &phase.tokens_reused);
      add(u.tokens_recomputed, &phase.tokens_recomputed);
      add(u.tokens_stable, &phase.tokens_stable);
      add(u.tokens_new, &phase.tokens_new);
      add(u.chunks_from_memory, &phase.chunks_from_memory);
      add(u.chunks_from_flash, &phase.chunks_from_flash);
      if (r.tokens_reusable >= 0) {
        add(r.tokens_reusable, &phase.tokens_reusable);
        add(r.tokens_found, &phase.tokens_found);
        add(r.tokens_cached, &phase.tokens_cached);
        all_found = all_found && r.tokens_found >= 0;
        all_cached = all_cached && r.tokens_cached >= 0;
      }
      const int64_t prompt = PromptTokensOf(u);
      if (r.oracle_prompt_tokens >= 0 && prompt >= 0) {
        phase.num_prompt_mismatches =
            std::max(phase.num_prompt_mismatches, 0) + (prompt != r.oracle_prompt_tokens);
      }
    }
    if (!all_found) phase.tokens_found = -1;
    if (!all_cached) phase.tokens_cached = -1;
    if (phase.tokens_reusable > 0) {
      const auto share = [&](int64_t count) {
        return count < 0 ? -1.0
                         : static_cast<double>(count) / static_cast<double>(phase.tokens_reusable);
      };
      phase.reuse_recall = share(phase.tokens_found);
      phase.cached_recall = share(phase.tokens_cached);
    }
    phase.ttft_ms = SummarizeTimes(std::move(ttft));
    phase.latency_ms = SummarizeTimes(std::move(latency));
    phase.decode_tokens_per_second = SummarizeTimes(std::move(decode));
  }
  return phases;
}

namespace {

std::string Fixed(double value, int decimals = 1) {
  if (!(value >= 0)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string Count(int64_t value) { return value < 0 ? "-" : std::to_string(value); }

json Nullable(double value) { return value >= 0 ? json(value) : json(nullptr); }
json Nullable(int64_t value) { return value >= 0 ? json(value) : json(nullptr); }

json TimeJson(const TimeSummary& t) {
  if (t.count == 0) return {{"count", 0}};
  return {{"count", t.count}, {"mean", t.mean}, {"p50", t.p50}, {"p90", t.p90}};
}

}  // namespace

std::string ServeBenchText(const ServeBenchRun& run) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "bench serve: trace %s, %zu requests to %s, model %s, endpoint %s, documents "
                "%s, context %d tokens (estimated)\n",
                run.trace.c_str(), run.requests.size(), run.url.c_str(), run.model.c_str(),
                std::string(ServeEndpointName(run.endpoint)).c_str(),
                std::string(DocumentsModeName(run.documents)).c_str(), run.context_tokens);
  out += line;
  std::snprintf(line, sizeof(line), "%4s  %-5s  %-32s %7s %7s %9s %8s %9s %7s %7s %7s %7s\n",
                "#", "phase", "id", "prompt", "cached", "TTFT ms", "tok/s", "total ms", "prefix",
                "reused", "recomp", "new");
  out += line;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestMeasurement& r = run.requests[i];
    const ServeUsage& u = r.usage;
    std::string id = r.id.size() > 32 ? r.id.substr(0, 31) + "~" : r.id;
    std::snprintf(line, sizeof(line), "%4zu  %-5s  %-32s %7s %7s %9s %8s %9s %7s %7s %7s %7s\n",
                  i + 1, r.phase.c_str(), id.c_str(), Count(u.prompt_tokens).c_str(),
                  Count(u.cached_tokens).c_str(), Fixed(r.ttft_ms).c_str(),
                  Fixed(r.decode_tokens_per_second).c_str(), Fixed(r.latency_ms).c_str(),
                  Count(u.tokens_prefix).c_str(), Count(u.tokens_reused).c_str(),
                  Count(u.tokens_recomputed).c_str(), Count(u.tokens_new).c_str());
    out += line;
  }
  for (const PhaseSummary& p : SummarizeServeBench(run.requests)) {
    std::snprintf(line, sizeof(line),
                  "%s: %d requests; TTFT mean %s ms, p50 %s, p90 %s; decode %s tok/s (mean of "
                  "%d); latency mean %s ms\n",
                  p.phase.c_str(), p.num_requests, Fixed(p.ttft_ms.mean).c_str(),
                  Fixed(p.ttft_ms.p50).c_str(), Fixed(p.ttft_ms.p90).c_str(),
                  p.decode_tokens_per_second.count > 0
                      ? Fixed(p.decode_tokens_per_second.mean).c_str()
                      : "-",
                  p.decode_tokens_per_second.count, Fixed(p.latency_ms.mean).c_str());
    out += line;
    std::snprintf(line, sizeof(line),
                  "  tokens: prompt %s, completion %s, cached %s; reuse: prefix %s (inexact %s), "
                  "reused %s (stable %s), recomputed %s, new %s; chunks from memory %s, from "
                  "flash %s\n",
                  Count(p.prompt_tokens).c_str(), Count(p.completion_tokens).c_str(),
                  Count(p.cached_tokens).c_str(), Count(p.tokens_prefix).c_str(),
                  Count(p.tokens_prefix_inexact).c_str(), Count(p.tokens_reused).c_str(),
                  Count(p.tokens_stable).c_str(), Count(p.tokens_recomputed).c_str(),
                  Count(p.tokens_new).c_str(), Count(p.chunks_from_memory).c_str(),
                  Count(p.chunks_from_flash).c_str());
    out += line;
    if (p.tokens_reusable >= 0) {
      std::snprintf(line, sizeof(line),
                    "  reusable %s tokens (covered by a window of an earlier prompt); found in "
                    "the cache %s of them (recall %s%%); cached_tokens %s (%s%% of reusable)\n",
                    Count(p.tokens_reusable).c_str(), Count(p.tokens_found).c_str(),
                    p.reuse_recall >= 0 ? Fixed(100.0 * p.reuse_recall).c_str() : "-",
                    Count(p.tokens_cached).c_str(),
                    p.cached_recall >= 0 ? Fixed(100.0 * p.cached_recall).c_str() : "-");
      out += line;
    }
    if (p.num_prompt_mismatches > 0) {
      std::snprintf(line, sizeof(line),
                    "  WARNING: %d of %d requests got prompt_tokens other than the oracle's "
                    "count: the server was sent, or made, another prompt\n",
                    p.num_prompt_mismatches, p.num_requests);
      out += line;
    }
  }
  const int64_t completion_tokens = AggregateCompletionTokens(run);
  if (run.wall_ms > 0) {
    std::snprintf(line, sizeof(line),
                  "aggregate: %lld completion tokens in %.1f s with %d client%s at once: %.1f "
                  "tokens/s\n",
                  static_cast<long long>(completion_tokens), run.wall_ms / 1000.0, run.clients,
                  run.clients == 1 ? "" : "s", completion_tokens * 1000.0 / run.wall_ms);
    out += line;
  }
  if (run.num_dropped_history_messages > 0) {
    out += "chat history: " + std::to_string(run.num_dropped_history_messages) +
           " oldest messages dropped to fit the context\n";
  }
  return out;
}

int64_t AggregateCompletionTokens(const ServeBenchRun& run) {
  int64_t tokens = 0;
  for (const RequestMeasurement& r : run.requests) {
    tokens += std::max<int64_t>(r.usage.completion_tokens, 0);
  }
  return tokens;
}

json ServeBenchJson(const ServeBenchRun& run) {
  json requests = json::array();
  for (const RequestMeasurement& r : run.requests) {
    const ServeUsage& u = r.usage;
    json entry = {{"id", r.id},
                  {"phase", r.phase},
                  {"ttft_ms", Nullable(r.ttft_ms)},
                  {"latency_ms", r.latency_ms},
                  {"decode_tokens_per_second", Nullable(r.decode_tokens_per_second)},
                  {"content_chunks", r.num_content_chunks},
                  {"malformed_events", r.num_malformed_events},
                  {"prompt_tokens", Nullable(u.prompt_tokens)},
                  {"completion_tokens", Nullable(u.completion_tokens)},
                  {"cached_tokens", Nullable(u.cached_tokens)},
                  {"oracle_prompt_tokens", Nullable(r.oracle_prompt_tokens)},
                  {"tokens_reusable", Nullable(r.tokens_reusable)},
                  {"tokens_found", Nullable(r.tokens_found)},
                  {"tokens_cached", Nullable(r.tokens_cached)}};
    if (u.has_reprise) {
      entry["reprise"] = {{"ttft_ms", Nullable(u.server_ttft_ms)},
                          {"tokens_prefix", Nullable(u.tokens_prefix)},
                          {"tokens_prefix_inexact", Nullable(u.tokens_prefix_inexact)},
                          {"tokens_reused", Nullable(u.tokens_reused)},
                          {"tokens_recomputed", Nullable(u.tokens_recomputed)},
                          {"tokens_stable", Nullable(u.tokens_stable)},
                          {"tokens_new", Nullable(u.tokens_new)},
                          {"chunks_from_memory", Nullable(u.chunks_from_memory)},
                          {"chunks_from_flash", Nullable(u.chunks_from_flash)},
                          {"decode_tokens_per_second", Nullable(u.server_decode_tokens_per_second)},
                          {"namespace", u.reprise_namespace}};
      if (u.has_found_runs) entry["reprise"]["found_runs"] = u.found_runs;
    }
    if (u.has_timings) {
      entry["timings"] = {{"prompt_ms", Nullable(u.timings_prompt_ms)},
                          {"prompt_n", Nullable(u.timings_prompt_n)},
                          {"cache_n", Nullable(u.timings_cache_n)},
                          {"predicted_per_second", Nullable(u.timings_predicted_per_second)}};
    }
    requests.push_back(std::move(entry));
  }
  json summary = json::array();
  for (const PhaseSummary& p : SummarizeServeBench(run.requests)) {
    summary.push_back(
        {{"phase", p.phase},
         {"requests", p.num_requests},
         {"ttft_ms", TimeJson(p.ttft_ms)},
         {"latency_ms", TimeJson(p.latency_ms)},
         {"decode_tokens_per_second", TimeJson(p.decode_tokens_per_second)},
         {"prompt_tokens", Nullable(p.prompt_tokens)},
         {"completion_tokens", Nullable(p.completion_tokens)},
         {"cached_tokens", Nullable(p.cached_tokens)},
         {"tokens_prefix", Nullable(p.tokens_prefix)},
         {"tokens_prefix_inexact", Nullable(p.tokens_prefix_inexact)},
         {"tokens_reused", Nullable(p.tokens_reused)},
         {"tokens_recomputed", Nullable(p.tokens_recomputed)},
         {"tokens_stable", Nullable(p.tokens_stable)},
         {"tokens_new", Nullable(p.tokens_new)},
         {"chunks_from_memory", Nullable(p.chunks_from_memory)},
         {"chunks_from_flash", Nullable(p.chunks_from_flash)},
         {"tokens_reusable", Nullable(p.tokens_reusable)},
         {"tokens_found", Nullable(p.tokens_found)},
         {"tokens_cached", Nullable(p.tokens_cached)},
         {"reuse_recall", Nullable(p.reuse_recall)},
         {"cached_recall", Nullable(p.cached_recall)},
         {"prompt_mismatches",
          p.num_prompt_mismatches >= 0 ? json(p.num_prompt_mismatches) : json(nullptr)}});
  }
  return {{"trace", run.trace},
          {"url", run.url},
          {"model", run.model},
          {"endpoint", ServeEndpointName(run.endpoint)},
          {"documents", DocumentsModeName(run.documents)},
          {"context_tokens", run.context_tokens},
          {"dropped_history_messages", run.num_dropped_history_messages},
          {"clients", run.clients},
          {"wall_ms", run.wall_ms},
          {"aggregate_completion_tokens_per_second",
           run.wall_ms > 0 ? AggregateCompletionTokens(run) * 1000.0 / run.wall_ms : 0.0},
          {"requests", std::move(requests)},
          {"summary", std::move(summary)}};
}

// ----- The run

void SetRecall(std::span<const uint8_t> reusable, RequestMeasurement& m) {
  m.oracle_prompt_tokens = static_cast<int64_t>(reusable.size());
  m.tokens_reusable = std::count(reusable.begin(), reusable.end(), uint8_t{1});
  m.tokens_cached = CachedTokensOf(m.usage);
  m.tokens_found = -1;
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (m.usage.has_found_runs) {
    runs = m.usage.found_runs;
  } else if (m.tokens_cached >= 0) {
    // OpenAI's cached_tokens are the prompt's start that matched a cached prompt (so are
    // vLLM's and SGLang's; llama-server's --cache-reuse shifts the cached chunks it finds
    // into that start).
    runs = {{0, m.tokens_cached}};
  } else {
    return;
  }
  m.tokens_found = tools::CountReusableIn<int64_t>(reusable, runs);
}

namespace {

// One server of a run: its clients (one per concurrent request), what it was found to be and
// its requests' bodies.
struct ServerUnderTest {
  std::vector<std::unique_ptr<ServeClient>> clients;
  ServeBenchRun run;
  ChatBodyOptions body_options;
};

// Connects to `url`, finds the model and resolves the documents mode.
Result<ServerUnderTest> OpenServer(const ServeBenchOptions& options, const std::string& url) {
  ServerUnderTest server;
  REPRISE_ASSIGN_OR_RETURN(
      std::unique_ptr<ServeClient> client,
      ServeClient::Create({.url = url, .api_key = options.api_key, .now_ms = options.now_ms}));
  ServeBenchRun& run = server.run;
  run.trace = options.trace;
  run.url = url;
  run.model = options.model;
  Result<ModelInfo> model = client->FindModel(options.model);
  if (!model.ok()) {
    // A server may lack /v1/models; one that cannot be reached, or lacks the model asked
    // for, ends the run here with the clearest message.
    const StatusCode code = model.error().code();
    if (code == StatusCode::kUnavailable || code == StatusCode::kNotFound ||
        model.error().message().find("HTTP 401") != std::string::npos ||
        model.error().message().find("HTTP 403") != std::string::npos) {
      return model.error();
    }
  } else {
    run.model = model->id;
  }
  run.endpoint = options.endpoint;
  run.documents = options.documents;
  if (run.endpoint == ServeEndpoint::kCompletions) {
    // One plain text: the documents are part of it, for every server.
    if (run.documents == DocumentsMode::kField) {
      return InvalidArgumentError(
          "--documents field needs the chat endpoint (with /v1/completions the documents are "
          "part of the prompt text)");
    }
    run.documents = DocumentsMode::kInline;
  } else if (run.documents == DocumentsMode::kAuto) {
    run.documents =
        model.ok() && model->owned_by == "reprise" ? DocumentsMode::kField : DocumentsMode::kInline;
  }
  run.context_tokens = options.context_tokens > 0                     ? options.context_tokens
                       : model.ok() && model->context_tokens > 0 ? model->context_tokens
                                                                 : kDefaultContextTokens;
  run.clients = options.clients;
  server.body_options = {.model = run.model,
                         .max_tokens = options.max_tokens,
                         .seed = options.seed,
                         .documents = run.documents};
  server.clients.push_back(std::move(client));
  while (static_cast<int>(server.clients.size()) < options.clients) {
    REPRISE_ASSIGN_OR_RETURN(
        std::unique_ptr<ServeClient> another,
        ServeClient::Create({.url = url, .api_key = options.api_key, .now_ms = options.now_ms}));
    server.clients.push_back(std::move(another));
  }
  return server;
}

}  // namespace

Result<ServeBenchRun> RunServeBench(const ServeBenchOptions& options,
                                    const ServeProgressFn& on_request) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<ServeBenchRun> runs,
                           RunServeBenchSideBySide(options, {options.url}, on_request));
  return std::move(runs.front());
}

Result<std::vector<ServeBenchRun>> RunServeBenchSideBySide(const ServeBenchOptions& options,
                                                           const std::vector<std::string>& urls,
                                                           const ServeProgressFn& on_request) {
  REPRISE_ASSIGN_OR_RETURN(workload::ServeTraceKind kind,
                           workload::ParseServeTraceKind(options.trace));
  if (urls.empty()) return InvalidArgumentError("no server URL");
  if (options.clients < 1) return InvalidArgumentError("clients must be >= 1");
  if (options.clients > 1 && kind == workload::ServeTraceKind::kChatSession) {
    return InvalidArgumentError(
        "the chat-session trace is one conversation (each turn follows the last reply): it "
        "takes one client");
  }
  if (options.clients > 1 && urls.size() > 1) {
    return InvalidArgumentError("servers side by side take one client");
  }
  std::vector<ServerUnderTest> servers;
  for (const std::string& url : urls) {
    REPRISE_ASSIGN_OR_RETURN(ServerUnderTest server, OpenServer(options, url));
    servers.push_back(std::move(server));
  }
  // One trace for all: the first server's context when the options give none.
  const int context_tokens = servers.front().run.context_tokens;
  for (ServerUnderTest& server : servers) server.run.context_tokens = context_tokens;
  if (context_tokens <= options.max_tokens) {
    return InvalidArgumentError("the context (" + std::to_string(context_tokens) +
                                " tokens) leaves no room for a prompt after --max-tokens " +
                                std::to_string(options.max_tokens));
  }
  const int max_prompt_tokens = context_tokens - options.max_tokens;

  workload::ServeTraceOptions trace_options;
  trace_options.data_dir = options.data_dir;
  trace_options.num_requests = options.num_requests;
  trace_options.max_prompt_tokens = max_prompt_tokens;
  trace_options.seed = options.seed;
  trace_options.max_catalog_skills = options.max_catalog_skills;
  trace_options.count_tokens = workload::EstimateTokens;
  REPRISE_ASSIGN_OR_RETURN(workload::ServeTrace trace,
                           workload::BuildServeTrace(kind, trace_options));

  // Every server is sent the same history: the chat-session trace records the dataset's
  // replies, not the servers'.
  workload::ChatWindow window(max_prompt_tokens, workload::EstimateTokens);
  const ServeEndpoint endpoint = options.endpoint;
  const int total = static_cast<int>(trace.requests.size());
  const size_t num_servers = servers.size();
  const auto replay_start = std::chrono::steady_clock::now();
  std::vector<double> busy_ms(num_servers, 0.0);
  for (int wave = 0; wave < total; wave += options.clients) {
    const int n = std::min(options.clients, total - wave);
    // [server][request of the wave]
    std::vector<std::vector<json>> bodies(num_servers);
    std::vector<std::optional<std::vector<uint8_t>>> masks(static_cast<size_t>(n));
    for (int j = 0; j < n; ++j) {
      const int i = wave + j;
      const workload::TraceRequest& request = trace.requests[static_cast<size_t>(i)];
      const std::vector<workload::TraceMessage> messages = window.Messages(request);
      for (size_t k = 0; k < num_servers; ++k) {
        const ChatBodyOptions& body_options = servers[k].body_options;
        bodies[k].push_back(endpoint == ServeEndpoint::kChat
                                ? BuildChatBody(request, messages, body_options)
                                : BuildCompletionBody(request, messages, body_options));
      }
      if (options.reusable_mask) {
        // The first server's body: every form makes the same prompt (each server's
        // prompt_tokens are checked against it).
        Result<std::vector<uint8_t>> mask = options.reusable_mask(bodies[0].back(), endpoint);
        if (!mask.ok()) {
          return mask.error().WithContext("request " + std::to_string(i + 1) + " (" + request.id +
                                          "): counting its reusable tokens");
        }
        masks[static_cast<size_t>(j)] = std::move(mask).value();
      }
    }
    // Side by side, the servers take turns, each wave starting with the next one, so that
    // each meets the machine's load as often first as second.
    std::vector<std::vector<Result<RequestMeasurement>>> measured(
        num_servers, std::vector<Result<RequestMeasurement>>(static_cast<size_t>(n), Status::Ok()));
    for (size_t turn = 0; turn < num_servers; ++turn) {
      const size_t k = (static_cast<size_t>(wave / options.clients) + turn) % num_servers;
      ServerUnderTest& server = servers[k];
      const auto start = std::chrono::steady_clock::now();
      if (n == 1) {
        measured[k][0] = server.clients[0]->Send(bodies[k][0], endpoint);
      } else {
        std::vector<std::thread> senders;
        for (int j = 0; j < n; ++j) {
          senders.emplace_back([&, j, k] {
            const auto jj = static_cast<size_t>(j);
            measured[k][jj] = servers[k].clients[jj]->Send(bodies[k][jj], endpoint);
          });
        }
        for (std::thread& t : senders) t.join();
      }
      busy_ms[k] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    }
    for (int j = 0; j < n; ++j) {
      const int i = wave + j;
      const workload::TraceRequest& request = trace.requests[static_cast<size_t>(i)];
      for (size_t k = 0; k < num_servers; ++k) {
        Result<RequestMeasurement>& m = measured[k][static_cast<size_t>(j)];
        if (!m.ok()) {
          return Status(m.error().code(),
                        (num_servers > 1 ? servers[k].run.url + ": " : std::string()) + "request " +
                            std::to_string(i + 1) + " of " + std::to_string(total) + " (" +
                            request.id + "): " + m.error().message());
        }
        m->id = request.id;
        m->phase = request.phase;
        if (const std::optional<std::vector<uint8_t>>& mask = masks[static_cast<size_t>(j)]) {
          SetRecall(*mask, *m);
        }
        if (on_request) on_request(*m, i, total);
      }
      window.AddReply(request, measured[0][static_cast<size_t>(j)]->reply);
      for (size_t k = 0; k < num_servers; ++k) {
        servers[k].run.requests.push_back(std::move(measured[k][static_cast<size_t>(j)]).value());
      }
    }
  }
  const double replay_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - replay_start)
          .count();
  std::vector<ServeBenchRun> runs;
  for (size_t k = 0; k < num_servers; ++k) {
    ServeBenchRun& run = servers[k].run;
    // Alone, the whole replay; side by side, the time spent on this server's requests.
    run.wall_ms = num_servers == 1 ? replay_ms : busy_ms[k];
    run.num_dropped_history_messages = window.num_dropped_messages();
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<ServeComparison> CompareServeRuns(const std::vector<ServeBenchRun>& runs) {
  std::vector<ServeComparison> rows;
  if (runs.empty()) return rows;
  for (const PhaseSummary& base : SummarizeServeBench(runs.front().requests)) {
    for (size_t k = 1; k < runs.size(); ++k) {
      ServeComparison row;
      row.phase = base.phase;
      row.url = runs[k].url;
      std::vector<const RequestMeasurement*> first, other;
      for (const RequestMeasurement& r : runs.front().requests) {
        if (r.phase == base.phase) first.push_back(&r);
      }
      for (const RequestMeasurement& r : runs[k].requests) {
        if (r.phase == base.phase) other.push_back(&r);
      }
      std::vector<double> ratios, first_ttft, other_ttft, later_first, later_other;
      for (size_t i = 0; i < std::min(first.size(), other.size()); ++i) {
        const double a = first[i]->ttft_ms, b = other[i]->ttft_ms;
        first_ttft.push_back(a);
        other_ttft.push_back(b);
        if (i > 0) {
          later_first.push_back(a);
          later_other.push_back(b);
        }
        if (a > 0 && b >= 0) ratios.push_back(b / a);
      }
      const auto ratio_of_means = [](std::vector<double> a, std::vector<double> b) {
        const TimeSummary x = SummarizeTimes(std::move(a)), y = SummarizeTimes(std::move(b));
        return std::pair{x.count > 0 && x.mean > 0 ? y.mean / x.mean : -1.0,
                         x.count > 0 && x.p50 > 0 ? y.p50 / x.p50 : -1.0};
      };
      row.num_requests = static_cast<int>(ratios.size());
      std::tie(row.mean_ratio, row.p50_ratio) = ratio_of_means(first_ttft, other_ttft);
      std::tie(row.later_mean_ratio, std::ignore) = ratio_of_means(later_first, later_other);
      const TimeSummary per_request = SummarizeTimes(std::move(ratios));
      row.median_request_ratio = per_request.count > 0 ? per_request.p50 : -1.0;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string ServeComparisonText(const std::vector<ServeBenchRun>& runs) {
  std::string out;
  char line[512];
  for (const ServeComparison& c : CompareServeRuns(runs)) {
    std::snprintf(line, sizeof(line),
                  "side by side, %s: %s against %s, TTFT ratio (its / the first's): mean %sx, "
                  "p50 %sx, mean of requests 2..n %sx, median of the %d per-request ratios "
                  "%sx\n",
                  c.phase.c_str(), c.url.c_str(), runs.front().url.c_str(),
                  Fixed(c.mean_ratio, 2).c_str(), Fixed(c.p50_ratio, 2).c_str(),
                  Fixed(c.later_mean_ratio, 2).c_str(), c.num_requests,
                  Fixed(c.median_request_ratio, 2).c_str());
    out += line;
  }
  return out;
}

json ServeComparisonJson(const std::vector<ServeBenchRun>& runs) {
  json runs_json = json::array();
  for (const ServeBenchRun& run : runs) runs_json.push_back(ServeBenchJson(run));
  json rows = json::array();
  for (const ServeComparison& c : CompareServeRuns(runs)) {
    rows.push_back({{"phase", c.phase},
                    {"url", c.url},
                    {"against", runs.front().url},
                    {"requests", c.num_requests},
                    {"ttft_mean_ratio", Nullable(c.mean_ratio)},
                    {"ttft_p50_ratio", Nullable(c.p50_ratio)},
                    {"ttft_mean_ratio_after_first", Nullable(c.later_mean_ratio)},
                    {"ttft_median_request_ratio", Nullable(c.median_request_ratio)}});
  }
  return {{"runs", std::move(runs_json)}, {"comparison", std::move(rows)}};
}

}  // namespace reprise::cli
