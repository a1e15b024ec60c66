// `reprise bench serve`: replays a request trace (workload/serve_trace.h) over HTTP against
// Reprise's server or any OpenAI-compatible one (llama.cpp's llama-server, ...) and reports
// the time to first token, decode speed and, where the server says, what it reused.
//
// The layers, bottom up, each testable without a network:
//   SseParser          server-sent events from bytes split anywhere (\n, \r\n or \r line ends,
//                      ':' comments, multi-line data).
//   ChatStream         the events of one chat completion (streamed chunks or a whole JSON
//                      body): the reply text, the content chunks' times, usage, `reprise`,
//                      llama-server's `timings`, an error object. Malformed input is counted,
//                      never thrown.
//   BuildChatBody      the request JSON for a trace request: documents and skills as Reprise's
//                      `documents` / `skills` fields, or inline as the system messages the
//                      engine makes of those fields (the same prompt text either way).
//   BuildCompletionBody  the same request as one plain-text prompt (PlainPrompt), for
//                      /v1/completions: every server gets exactly the same text.
//   ServeClient        HTTP on cpp-httplib: GET /v1/models, POST /v1/chat/completions or
//                      /v1/completions (stream, include_usage), the clock injected.
//   RunServeBench      builds the trace and replays it; RunServeBenchSideBySide replays it
//                      against several servers at once, request by request in turns (the
//                      machine's load then weighs on each alike), CompareServeRuns the ratios.
//   SummarizeServeBench / ServeBenchText / ServeBenchJson   the figures and their printing.
// The subcommand's flags are in command_bench.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "workload/serve_trace.h"

namespace httplib {
class Client;
}

namespace reprise::cli {

// ---------------------------------------------------------------------------------------------
// Server-sent events (the WHATWG event-stream format).

struct SseEvent {
  std::string event;  // the "event:" field; "" for the default "message"
  std::string data;   // the "data:" lines joined with '\n'
};

// Thread-compatible. Fields other than event and data (id, retry, unknown) are ignored.
class SseParser {
 public:
  using EventFn = std::function<void(SseEvent)>;

  // Parses `bytes`, the next piece of the stream (any split), calling on_event for every
  // event that a blank line completes.
  void Feed(std::string_view bytes, const EventFn& on_event);

  // The end of the stream: a last line without its line end is taken, and an event that
  // lacks its closing blank line is dispatched too (lenient: some servers end that way).
  void Finish(const EventFn& on_event);

 private:
  void ProcessLine(const EventFn& on_event);
  void Dispatch(const EventFn& on_event);

  std::string line_;
  bool after_cr_ = false;  // the last byte was '\r': a '\n' right after it ends nothing
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

// ---------------------------------------------------------------------------------------------
// One chat completion response.

// What a response says about itself; -1 (or "") where the server did not say.
struct ServeUsage {
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens
  // Reprise's `reprise` object.
  bool has_reprise = false;
  double server_ttft_ms = -1;
  int64_t tokens_prefix = -1;
  int64_t tokens_prefix_inexact = -1;  // of the prefix, continuing blended KV
  int64_t tokens_reused = -1;
  int64_t tokens_recomputed = -1;
  int64_t tokens_stable = -1;  // of tokens_reused, a moved window's kept without a graph call
  int64_t tokens_new = -1;
  int64_t chunks_from_memory = -1;
  int64_t chunks_from_flash = -1;
  double server_decode_tokens_per_second = -1;
  std::string reprise_namespace;
  // Which prompt tokens came from the cache, [begin, end) in prompt order (`found_runs`).
  bool has_found_runs = false;
  std::vector<std::pair<int64_t, int64_t>> found_runs;
  // llama-server's `timings`.
  bool has_timings = false;
  double timings_prompt_ms = -1;
  int64_t timings_prompt_n = -1;
  int64_t timings_cache_n = -1;
  double timings_predicted_per_second = -1;
};

// Accumulates the events of one streamed chat completion, or a whole non-streamed body.
// Times are milliseconds on the caller's clock. Thread-compatible.
class ChatStream {
 public:
  // One SSE event's data: a chunk object, "[DONE]", or garbage (counted in
  // num_malformed_events). A chunk with non-empty choices[0].delta.content (or
  // choices[0].text), or with a delta.tool_calls piece (a function's name or arguments, added
  // to the reply), is a content chunk, received at now_ms.
  void OnEventData(std::string_view data, double now_ms);

  // A whole non-streamed response body (choices[0].message.content), received at now_ms.
  void OnWholeBody(std::string_view body, double now_ms);

  const std::string& reply() const { return reply_; }
  const ServeUsage& usage() const { return usage_; }
  int num_content_chunks() const { return num_content_chunks_; }
  double first_content_ms() const { return first_content_ms_; }  // -1: no content
  double last_content_ms() const { return last_content_ms_; }
  bool saw_done() const { return saw_done_; }
  int num_malformed_events() const { return num_malformed_events_; }
  // The message of an {"error": ...} object sent in the stream; "" when none.
  const std::string& error_message() const { return error_message_; }

 private:
  // One JSON object: a streamed chunk or a whole response; malformed ones and error objects
  // are recorded, the rest go to OnChunk.
  void OnJson(std::string_view text, double now_ms, bool streamed);
  void OnChunk(const nlohmann::json& chunk, double now_ms, bool streamed);

  std::string reply_;
  ServeUsage usage_;
  int num_content_chunks_ = 0;
  double first_content_ms_ = -1;
  double last_content_ms_ = -1;
  bool saw_done_ = false;
  int num_malformed_events_ = 0;
  std::string error_message_;
};

// Reads `usage`, `reprise` and `timings` from a response object into *usage (fields absent or
// of the wrong type are left as they were).
void ReadUsage(const nlohmann::json& response, ServeUsage* usage);

// The prompt's tokens and those served from the server's cache: usage's counts, else
// llama-server's timings (prompt_n + cache_n, cache_n); -1 when the server said neither.
int64_t PromptTokensOf(const ServeUsage& usage);
int64_t CachedTokensOf(const ServeUsage& usage);

// The message of an OpenAI error body {"error": {"message", "type", "code"}} as
// "<type> (<code>): <message>", or the body's first 200 bytes when it is not one.
std::string DescribeErrorBody(std::string_view body);

// ---------------------------------------------------------------------------------------------
// Requests.

enum class DocumentsMode { kAuto, kField, kInline };

// "auto", "field", "inline". Errors: InvalidArgument.
Result<DocumentsMode> ParseDocumentsMode(std::string_view name);
std::string_view DocumentsModeName(DocumentsMode mode);

// The API the trace is sent to: POST /v1/chat/completions (messages) or /v1/completions (one
// plain-text prompt).
enum class ServeEndpoint { kChat, kCompletions };

// "chat", "completions". Errors: InvalidArgument.
Result<ServeEndpoint> ParseServeEndpoint(std::string_view name);
std::string_view ServeEndpointName(ServeEndpoint endpoint);
std::string_view ServeEndpointPath(ServeEndpoint endpoint);  // "/v1/chat/completions", ...

struct ChatBodyOptions {
  std::string model;
  int max_tokens = 64;
  uint64_t seed = 0;
  DocumentsMode documents = DocumentsMode::kField;  // kField or kInline (auto resolved first)
};

// The POST /v1/chat/completions body: messages, max_tokens (the request's own when it has
// one), temperature 0, seed, stream with include_usage; documents and skills as
// `"documents"` / `"skills"` arrays of {id, text} (kField), or (kInline) exactly the messages
// Reprise's engine makes of those fields (GenerateRequest::documents): after the leading
// system messages, each skill, then each document, a system message of its own,
// "Skill <id>:\n<text>" / "Document <id>:\n<text>". Both forms give the same prompt.
// agent-tools requests: kField sends `tools` and the transcript's `tool_calls` / `tool`
// messages as OpenAI's API has them; kInline the tools as the first skill ("Skill tools:\n"
// and server::ToolsSystemText), the messages as InlineMessage renders them.
nlohmann::json BuildChatBody(const workload::TraceRequest& request,
                             const std::vector<workload::TraceMessage>& messages,
                             const ChatBodyOptions& options);

// agent-tools: the trace's functions as OpenAI's `tools` (parameters kAgentToolParameters).
nlohmann::json TraceToolsJson(const std::vector<workload::TraceTool>& tools);

// A message as Reprise's server shows it to the model, for servers sent the rendered text:
// an assistant's tool_calls appended to its content as server/tool_calls.h renders them, a
// `tool` result as a user message <tool_response>...</tool_response>; others unchanged.
workload::TraceMessage InlineMessage(const workload::TraceMessage& message);

// The request as one plain text: the leading system messages, then the tools (agent-tools,
// as BuildChatBody's kInline), each skill and each document as "Skill <id>:\n<text>\n\n" /
// "Document <id>:\n<text>\n\n", then the other messages' contents (InlineMessage's), one
// after the other, each ended by a line end but the last (the prompt ends where the answer
// begins: "...\nAnswer:", a chat's newest turn).
std::string PlainPrompt(const workload::TraceRequest& request,
                        const std::vector<workload::TraceMessage>& messages);

// The POST /v1/completions body: {"prompt": PlainPrompt(...)} and the other fields of
// BuildChatBody's; documents are always in the text (options.documents is not read).
nlohmann::json BuildCompletionBody(const workload::TraceRequest& request,
                                   const std::vector<workload::TraceMessage>& messages,
                                   const ChatBodyOptions& options);

// One request as the client saw it. Times in ms; -1 where not measured.
struct RequestMeasurement {
  std::string id;
  std::string phase;
  double ttft_ms = -1;    // sending -> first content chunk
  double latency_ms = 0;  // sending -> the response's end
  // (completion_tokens - 1) / (last content chunk - first); -1 with fewer than 2 tokens.
  double decode_tokens_per_second = -1;
  int num_content_chunks = 0;
  int num_malformed_events = 0;
  std::string reply;
  ServeUsage usage;
  // Reuse recall (with ServeBenchOptions::reusable_mask), -1 where not measured:
  //   oracle_prompt_tokens  the prompt's length as the oracle built it; a server that reports
  //                         another usage.prompt_tokens was sent (or made) another prompt.
  //   tokens_reusable       its tokens that a window seen in an earlier prompt covers;
  //   tokens_found          of those, the ones the server says came from its cache, token by
  //                         token (found ∩ reusable): Reprise's found_runs (prefix, reused and
  //                         recomputed tokens), else the first cached_tokens tokens (OpenAI's
  //                         cached_tokens are a cached start of the prompt; llama-server's
  //                         --cache-reuse shifts the chunks it finds into that start);
  //   tokens_cached         the server's count of cached tokens (CachedTokensOf; Reprise's
  //                         excludes recomputed tokens), not intersected: it can count tokens
  //                         that the oracle does not (a shared start shorter than a window).
  int64_t oracle_prompt_tokens = -1;
  int64_t tokens_reusable = -1;
  int64_t tokens_found = -1;
  int64_t tokens_cached = -1;
};

// Derives ttft, latency and decode speed from a finished stream.
RequestMeasurement Measure(const ChatStream& stream, double start_ms, double end_ms);

// Sets m's recall fields from the oracle's mask of its prompt (1 = reusable) and m.usage:
// found = the mask's reusable tokens inside the server's found_runs, or inside its first
// cached tokens (CachedTokensOf) when it gives no runs.
void SetRecall(std::span<const uint8_t> reusable, RequestMeasurement& m);

struct ModelInfo {
  std::string id;
  std::string owned_by;
  int context_tokens = 0;  // 0: the server did not say
};

struct ServeClientOptions {
  std::string url;      // http://host[:port][/prefix]
  std::string api_key;  // sent as "Authorization: Bearer <key>" when not empty
  double timeout_s = 600;
  std::function<double()> now_ms;  // the clock; empty = steady_clock
};

// An HTTP client of one server. Thread-compatible (one request at a time).
class ServeClient {
 public:
  // Errors: InvalidArgument for a URL that is not http://host[:port][/prefix].
  static Result<std::unique_ptr<ServeClient>> Create(ServeClientOptions options);
  ~ServeClient();

  // GET /v1/models: the model named `wanted` (or the first when empty). Errors: Unavailable
  // (connection), InvalidArgument (HTTP 4xx, with the server's message), Unavailable (5xx),
  // Corrupt (not a model list), NotFound (no such model).
  Result<ModelInfo> FindModel(std::string_view wanted);

  // POSTs `body` to the endpoint's path and measures it. Errors as FindModel's, plus
  // Corrupt for a response without any content or usage, and the message of an error object
  // sent in the stream.
  Result<RequestMeasurement> Send(const nlohmann::json& body,
                                  ServeEndpoint endpoint = ServeEndpoint::kChat);

 private:
  ServeClient(ServeClientOptions options, std::string prefix,
              std::unique_ptr<httplib::Client> http);
  double Now() const;

  ServeClientOptions options_;
  std::string prefix_;  // the URL's path, without a trailing '/'
  std::unique_ptr<httplib::Client> http_;
};

// ---------------------------------------------------------------------------------------------
// Figures.

struct TimeSummary {
  int count = 0;  // measurements taken (those >= 0)
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
};

// Percentiles by linear interpolation between the closest ranks (numpy's default).
TimeSummary SummarizeTimes(std::vector<double> values);

struct PhaseSummary {
  std::string phase;
  int num_requests = 0;
  TimeSummary ttft_ms;
  TimeSummary latency_ms;
  TimeSummary decode_tokens_per_second;
  // Sums over the requests that reported them (-1 when none did).
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;
  int64_t tokens_prefix = -1;
  int64_t tokens_prefix_inexact = -1;  // of the prefix, continuing blended KV
  int64_t tokens_reused = -1;
  int64_t tokens_recomputed = -1;
  int64_t tokens_stable = -1;
  int64_t tokens_new = -1;
  int64_t chunks_from_memory = -1;
  int64_t chunks_from_flash = -1;
  // Over the requests the oracle counted (-1: none; found and cached: -1 unless every one of
  // them reported it): reuse_recall = found / reusable (found ∩ reusable, token by token);
  // cached_recall = cached / reusable (the servers' own counts, not intersected).
  int64_t tokens_reusable = -1;
  int64_t tokens_found = -1;
  int64_t tokens_cached = -1;
  double reuse_recall = -1;
  double cached_recall = -1;
  // Requests whose usage.prompt_tokens differs from the oracle's count (-1: not checked).
  int num_prompt_mismatches = -1;
};

// One summary per phase, in order of first appearance.
std::vector<PhaseSummary> SummarizeServeBench(const std::vector<RequestMeasurement>& requests);

struct ServeBenchRun {
  std::string trace;
  std::string url;
  std::string model;
  DocumentsMode documents = DocumentsMode::kInline;
  ServeEndpoint endpoint = ServeEndpoint::kChat;
  int context_tokens = 0;
  int num_dropped_history_messages = 0;  // chat-session
  std::vector<RequestMeasurement> requests;
  // Requests sent at once (ServeBenchOptions::clients), and the wall time of the whole
  // replay: completion tokens / wall time is the server's aggregate generation rate.
  int clients = 1;
  double wall_ms = 0.0;
};

// The completion tokens of every request that reported them.
int64_t AggregateCompletionTokens(const ServeBenchRun& run);
std::string ServeBenchText(const ServeBenchRun& run);
nlohmann::json ServeBenchJson(const ServeBenchRun& run);

// ---------------------------------------------------------------------------------------------
// The run.

struct ServeBenchOptions {
  std::string url;
  std::string trace;      // a workload::ServeTraceNames() name
  std::string data_dir;   // the shared data folder (holds workloads/)
  int num_requests = 10;  // queries; the docqa index requests come on top
  int max_tokens = 32;
  std::string api_key;
  std::string model;  // "" = the server's first
  // The context window the prompts must fit, generation included, in EstimateTokens; 0 = the
  // server's when /v1/models says, else kDefaultContextTokens.
  int context_tokens = 0;
  DocumentsMode documents = DocumentsMode::kAuto;  // kField needs the chat endpoint
  ServeEndpoint endpoint = ServeEndpoint::kChat;
  int max_catalog_skills = 0;  // agent: skills in the catalogue and drawn from (0 = all)
  // Clients sending at once: the trace is replayed in waves of this many requests, each wave
  // sent together and awaited (chat-session needs 1: each turn follows the last reply).
  int clients = 1;
  uint64_t seed = 0;
  std::function<double()> now_ms;  // empty = steady_clock
  // Reuse recall: called with each request body and its endpoint, in order, before it is
  // sent; returns one byte per token of its prompt (as the server's tokenizer and chat
  // template make them), 1 where a window of the planner's min_match_tokens seen in an
  // earlier request's prompt covers the token, and remembers the prompt
  // (tools::RequestRecallOracle; the command wires it to the model file given with
  // --tokenizer). Empty = recall is not measured.
  std::function<Result<std::vector<uint8_t>>(const nlohmann::json& body, ServeEndpoint endpoint)>
      reusable_mask;
};

inline constexpr int kDefaultContextTokens = 2048;

// Called after each request: its measurement, its 0-based index and the number of requests.
using ServeProgressFn = std::function<void(const RequestMeasurement&, int, int)>;

// Builds the trace, finds the model, resolves auto, replays the requests in order (chat
// replies feed the next turns). Errors: the trace builder's, and the first failing request's
// (its index and id in the message).
Result<ServeBenchRun> RunServeBench(const ServeBenchOptions& options,
                                    const ServeProgressFn& on_request);

// The same replay against every server of `urls` (options.url is not read) with one client:
// each request is sent to each server in turn, the first server of the turn rotating request
// by request, so that a load that comes and goes on a shared machine weighs on each alike.
// The trace and the prompts are the same for all (the context: options.context_tokens, else
// the first server's); each server's documents mode is resolved on its own (auto). The
// recall oracle sees the first server's body. on_request is called for each server's
// measurement. ServeBenchRun::wall_ms is the time spent on that server's requests. Errors:
// RunServeBench's, and InvalidArgument for no URL or clients > 1 with several.
Result<std::vector<ServeBenchRun>> RunServeBenchSideBySide(const ServeBenchOptions& options,
                                                           const std::vector<std::string>& urls,
                                                           const ServeProgressFn& on_request);

// Each later run against the first, per phase (requests paired by their index in the trace).
// Ratios are its TTFT / the first's; -1 where not measured.
struct ServeComparison {
  std::string phase;
  std::string url;       // the later run's
  int num_requests = 0;  // pairs with both TTFTs
  double mean_ratio = -1;
  double p50_ratio = -1;
  double later_mean_ratio = -1;      // means of requests 2..n (the first is cold on both)
  double median_request_ratio = -1;  // the median of the per-request ratios
};
std::vector<ServeComparison> CompareServeRuns(const std::vector<ServeBenchRun>& runs);
std::string ServeComparisonText(const std::vector<ServeBenchRun>& runs);
// {"runs": [ServeBenchJson of each], "comparison": [...]}.
nlohmann::json ServeComparisonJson(const std::vector<ServeBenchRun>& runs);

}  // namespace reprise::cli
