// bench serve's client: the SSE parser split at every byte, chat chunks and malformed input
// (a seeded fuzz), request bodies, the figures, and the client end to end against a small
// httplib server in the test that speaks the protocol (streamed chunks, usage, `reprise`,
// OpenAI error bodies).
#include "cli/bench_serve.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "support/shared_data.h"

namespace reprise::cli {
namespace {

using nlohmann::json;

std::vector<SseEvent> ParseAll(const std::vector<std::string_view>& pieces, bool finish = true) {
  std::vector<SseEvent> events;
  SseParser parser;
  auto collect = [&](SseEvent e) { events.push_back(std::move(e)); };
  for (std::string_view piece : pieces) parser.Feed(piece, collect);
  if (finish) parser.Finish(collect);
  return events;
}

constexpr std::string_view kStream =
    ": a comment\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "event: update\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "\n"
    ":keep-alive\r"
    "data: cr only\r"
    "\r"
    "data\n"
    "\n"
    "data: [DONE]\n\n";

void ExpectStreamEvents(const std::vector<SseEvent>& events) {
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[0].event, "");
  EXPECT_EQ(events[1].event, "update");
  EXPECT_EQ(events[1].data, "line one\nline two");  // one leading space stripped, if any
  EXPECT_EQ(events[2].data, "cr only");
  EXPECT_EQ(events[3].data, "");  // a "data" line without a colon: empty data
  EXPECT_EQ(events[4].data, "[DONE]");
}

TEST(SseParserTest, ParsesLineEndsCommentsAndMultiLineData) {
  ExpectStreamEvents(ParseAll({kStream}));
}

TEST(SseParserTest, SameEventsWhereverTheStreamIsSplit) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    ExpectStreamEvents(ParseAll({kStream.substr(0, cut), kStream.substr(cut)}));
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < kStream.size(); ++i) bytes.push_back(kStream.substr(i, 1));
  ExpectStreamEvents(ParseAll(bytes));
}

TEST(SseParserTest, FinishTakesAnEventWithoutItsBlankLine) {
  EXPECT_TRUE(ParseAll({"data: x\n"}, /*finish=*/false).empty());
  std::vector<SseEvent> events = ParseAll({"data: x\ndata: y"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x\ny");
  EXPECT_TRUE(ParseAll({": only a comment\n\n\n"}).empty());
}

std::string Chunk(std::string_view content) {
  return json({{"object", "chat.completion.chunk"},
               {"choices", {{{"index", 0}, {"delta", {{"content", content}}}}}}})
      .dump();
}

// A streamed chunk of /v1/completions.
std::string TextChunk(std::string_view text) {
  return json({{"object", "text_completion"}, {"choices", {{{"index", 0}, {"text", text}}}}})
      .dump();
}

constexpr std::string_view kFinalChunk =
    R"({"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":3,"total_tokens":123,)"
    R"("prompt_tokens_details":{"cached_tokens":96}},"reprise":{"ttft_ms":4.5,)"
    R"("tokens_prefix":10,"tokens_prefix_inexact":4,"tokens_reused":86,)"
    R"("tokens_recomputed":9,"tokens_new":15,)"
    R"("chunks_from_memory":2,"chunks_from_flash":1,"decode_tokens_per_second":250.0,)"
    R"("namespace":"default","found_runs":[[0,10],[20,115]]}})";

TEST(ChatStreamTest, CollectsContentTimesUsageAndReuse) {
  ChatStream stream;
  stream.OnEventData(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})", 10);
  stream.OnEventData(Chunk("Hel"), 30);
  stream.OnEventData(Chunk("lo"), 40);
  stream.OnEventData(Chunk("!"), 50);
  stream.OnEventData(kFinalChunk, 51);
  stream.OnEventData("[DONE]", 52);
  EXPECT_EQ(stream.reply(), "Hello!");
  EXPECT_EQ(stream.num_content_chunks(), 3);
  EXPECT_TRUE(stream.saw_done());
  EXPECT_EQ(stream.num_malformed_events(), 0);
  const ServeUsage& u = stream.usage();
  EXPECT_EQ(u.prompt_tokens, 120);
  EXPECT_EQ(u.completion_tokens, 3);
  EXPECT_EQ(u.cached_tokens, 96);
  EXPECT_TRUE(u.has_reprise);
  EXPECT_DOUBLE_EQ(u.server_ttft_ms, 4.5);
  EXPECT_EQ(u.tokens_prefix, 10);
  EXPECT_EQ(u.tokens_prefix_inexact, 4);
  EXPECT_EQ(u.tokens_reused, 86);
  EXPECT_EQ(u.tokens_recomputed, 9);
  EXPECT_EQ(u.tokens_new, 15);
  EXPECT_EQ(u.chunks_from_memory, 2);
  EXPECT_EQ(u.chunks_from_flash, 1);
  EXPECT_EQ(u.reprise_namespace, "default");
  EXPECT_TRUE(u.has_found_runs);
  EXPECT_EQ(u.found_runs, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {20, 115}}));
  EXPECT_FALSE(u.has_timings);

  // Sent at 0: TTFT to the first content chunk; 2 tokens after the first in 20 ms.
  RequestMeasurement m = Measure(stream, 0, 60);
  EXPECT_DOUBLE_EQ(m.ttft_ms, 30);
  EXPECT_DOUBLE_EQ(m.latency_ms, 60);
  EXPECT_DOUBLE_EQ(m.decode_tokens_per_second, 100);
  EXPECT_EQ(m.reply, "Hello!");
}

TEST(ChatStreamTest, ReadsLlamaServerTimingsAndWholeBodies) {
  ChatStream stream;
  stream.OnWholeBody(
      R"({"choices":[{"message":{"role":"assistant","content":"Hi"}}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":1},)"
      R"("timings":{"prompt_n":2,"cache_n":3,"prompt_ms":1.5,"predicted_per_second":80.5}})",
      25);
  EXPECT_EQ(stream.reply(), "Hi");
  EXPECT_TRUE(stream.usage().has_timings);
  EXPECT_EQ(stream.usage().timings_cache_n, 3);
  EXPECT_DOUBLE_EQ(stream.usage().timings_predicted_per_second, 80.5);
  EXPECT_FALSE(stream.usage().has_reprise);
  RequestMeasurement m = Measure(stream, 5, 25);
  EXPECT_DOUBLE_EQ(m.ttft_ms, 20);
  EXPECT_LT(m.decode_tokens_per_second, 0);  // one token: no decode speed
}

TEST(ChatStreamTest, ErrorObjectsAreReported) {
  ChatStream stream;
  stream.OnEventData(R"({"error":{"message":"context full","type":"server_error","code":503}})",
                     1);
  EXPECT_EQ(stream.error_message(), "server_error (503): context full");
  EXPECT_EQ(DescribeErrorBody(
                R"({"error":{"message":"bad max_tokens","type":"invalid_request_error",)"
                R"("code":"invalid_value"}})"),
            "invalid_request_error (invalid_value): bad max_tokens");
  EXPECT_EQ(DescribeErrorBody("<html>oops</html>"), "<html>oops</html>");
  EXPECT_EQ(DescribeErrorBody(""), "(empty body)");
}

TEST(ChatStreamTest, MalformedInputNeverThrowsAndIsCounted) {
  const std::vector<std::string> inputs = {
      "", "{", "null", "[1,2]", "\"text\"", "{\"choices\":\"no\"}", "{\"choices\":[]}",
      "{\"choices\":[1]}", "{\"choices\":[{\"delta\":[]}]}",
      "{\"choices\":[{\"delta\":{\"content\":7}}]}",
      "{\"usage\":{\"prompt_tokens\":\"many\",\"completion_tokens\":1e300}}",
      "{\"usage\":{\"completion_tokens\":-5,\"prompt_tokens\":18446744073709551615}}",
      "{\"reprise\":[],\"timings\":7,\"usage\":null}", "{\"error\":null}",
      "{\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}", "\xff\xfe{}",
      std::string(10000, '['), "data: {}"};
  for (const std::string& input : inputs) {
    ChatStream stream;
    stream.OnEventData(input, 1);
    stream.OnWholeBody(input, 2);
    RequestMeasurement m = Measure(stream, 0, 3);
    EXPECT_GE(m.latency_ms, 0);
  }
  ChatStream stream;
  stream.OnEventData("{", 1);
  stream.OnEventData("not json", 1);
  EXPECT_EQ(stream.num_malformed_events(), 2);

  // Seeded fuzz: valid chunks cut, with bytes flipped, fed through the SSE parser split
  // anywhere.
  std::mt19937_64 rng(1234);
  const std::string valid = "data: " + Chunk("token") + "\r\n\r\ndata: " +
                            std::string(kFinalChunk) + "\n\ndata: [DONE]\n\n";
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = valid.substr(0, rng() % (valid.size() + 1));
    const int flips = static_cast<int>(rng() % 4);
    for (int f = 0; f < flips && !bytes.empty(); ++f) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    }
    SseParser parser;
    ChatStream fuzzed;
    const size_t cut = bytes.empty() ? 0 : rng() % bytes.size();
    auto on_event = [&](SseEvent e) { fuzzed.OnEventData(e.data, 1); };
    parser.Feed(std::string_view(bytes).substr(0, cut), on_event);
    parser.Feed(std::string_view(bytes).substr(cut), on_event);
    parser.Finish(on_event);
    RequestMeasurement m = Measure(fuzzed, 0, 2);
    EXPECT_LE(m.num_content_chunks, 1);
  }
}

workload::TraceRequest DocRequest() {
  workload::TraceRequest request;
  request.id = "q1";
  request.system = "Answer.";
  request.documents = {{"d1", "Paris is in France."}, {"d2", "Rome is in Italy."}};
  request.skills = {{"s1", "Use a map."}};
  request.user = "Where is Paris?";
  return request;
}

TEST(BuildChatBodyTest, FieldModeSendsDocumentsAndSkillsAsSegments) {
  const workload::TraceRequest request = DocRequest();
  json body = BuildChatBody(request, {{"system", "Answer."}, {"user", "Where is Paris?"}},
                            {.model = "m", .max_tokens = 16, .seed = 3,
                             .documents = DocumentsMode::kField});
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["seed"], 3);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  ASSERT_EQ(body["documents"].size(), 2u);
  EXPECT_EQ(body["documents"][1]["id"], "d2");
  EXPECT_EQ(body["documents"][1]["text"], "Rome is in Italy.");
  EXPECT_EQ(body["skills"][0]["id"], "s1");
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["content"], "Answer.");
}

// Inline, the texts are the system messages the engine makes of the fields: after the
// leading system messages, skills first, each titled.
TEST(BuildChatBodyTest, InlineModeSendsTheSystemMessagesTheEngineMakesOfTheFields) {
  workload::TraceRequest request = DocRequest();
  request.max_tokens = 1;
  json body = BuildChatBody(request, {{"system", "Answer."}, {"user", "Where is Paris?"}},
                            {.max_tokens = 16, .documents = DocumentsMode::kInline});
  EXPECT_FALSE(body.contains("documents"));
  EXPECT_FALSE(body.contains("skills"));
  EXPECT_FALSE(body.contains("model"));
  EXPECT_EQ(body["max_tokens"], 1);  // the request's own
  EXPECT_EQ(body["messages"], json::parse(R"([
      {"role": "system", "content": "Answer."},
      {"role": "system", "content": "Skill s1:\nUse a map."},
      {"role": "system", "content": "Document d1:\nParis is in France."},
      {"role": "system", "content": "Document d2:\nRome is in Italy."},
      {"role": "user", "content": "Where is Paris?"}])"));
  // Without a system message, the texts come first.
  body =
      BuildChatBody(request, {{"user", "Where is Paris?"}}, {.documents = DocumentsMode::kInline});
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0]["content"], "Skill s1:\nUse a map.");
  EXPECT_EQ(body["messages"][3]["role"], "user");
}

TEST(BuildChatBodyTest, CompletionBodyIsOnePlainTextWithTheDocumentsInIt) {
  const workload::TraceRequest request = DocRequest();
  const std::vector<workload::TraceMessage> messages = {{"system", "Answer.\n"},
                                                        {"user", "Tell me."},
                                                        {"assistant", "What?"},
                                                        {"user", "Where is Paris?\nAnswer:"}};
  const json body =
      BuildCompletionBody(request, messages, {.model = "m", .max_tokens = 8, .seed = 2});
  EXPECT_EQ(body["prompt"],
            "Answer.\nSkill s1:\nUse a map.\n\nDocument d1:\nParis is in France.\n\n"
            "Document d2:\nRome is in Italy.\n\nTell me.\nWhat?\nWhere is Paris?\nAnswer:");
  EXPECT_EQ(body["prompt"], PlainPrompt(request, messages));
  EXPECT_FALSE(body.contains("messages"));
  EXPECT_FALSE(body.contains("documents"));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["max_tokens"], 8);
  EXPECT_EQ(body["stream"], true);
}

// An agent-tools step: the tools, the task, one call and its result.
workload::TraceRequest ToolStep() {
  workload::TraceRequest request;
  request.id = "agent-tools:t#2";
  request.system = "Act.";
  request.user = "Convert the file.";
  request.tools = {{"pdf", "Read PDFs."}, {"xlsx", "Edit spreadsheets."}};
  workload::TraceMessage call{"assistant", "", {}, ""};
  call.tool_calls.push_back({"call_t_1", "pdf", R"({"request":"Convert the file."})"});
  request.transcript = {call, {"tool", "PDF skill text.", {}, "call_t_1"}};
  return request;
}

TEST(BuildChatBodyTest, ToolStepsSendToolsCallsAndResultsAsOpenAiHasThem) {
  const workload::TraceRequest request = ToolStep();
  workload::ChatWindow window(0, workload::EstimateTokens);
  const std::vector<workload::TraceMessage> messages = window.Messages(request);
  const json field = BuildChatBody(request, messages, {.documents = DocumentsMode::kField});
  ASSERT_EQ(field["tools"].size(), 2u);
  EXPECT_EQ(field["tools"][1]["type"], "function");
  EXPECT_EQ(field["tools"][1]["function"]["name"], "xlsx");
  EXPECT_EQ(field["tools"][1]["function"]["description"], "Edit spreadsheets.");
  EXPECT_EQ(field["tools"][1]["function"]["parameters"],
            json::parse(workload::kAgentToolParameters));
  EXPECT_EQ(field["messages"], json::parse(R"([
      {"role": "system", "content": "Act."},
      {"role": "user", "content": "Convert the file."},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_t_1",
       "type": "function", "function": {"name": "pdf",
       "arguments": "{\"request\":\"Convert the file.\"}"}}]},
      {"role": "tool", "tool_call_id": "call_t_1", "content": "PDF skill text."}])"));
  // Inline: the tools as the skill Reprise makes of them, the call and result as rendered.
  const json inline_body = BuildChatBody(request, messages, {.documents = DocumentsMode::kInline});
  EXPECT_FALSE(inline_body.contains("tools"));
  ASSERT_EQ(inline_body["messages"].size(), 5u);
  const std::string tools_text = inline_body["messages"][1]["content"];
  EXPECT_TRUE(tools_text.starts_with("Skill tools:\n# Tools\n")) << tools_text;
  EXPECT_NE(tools_text.find("\"name\":\"xlsx\""), std::string::npos) << tools_text;
  EXPECT_EQ(inline_body["messages"][3], json::parse(R"({"role": "assistant", "content":
      "<tool_call>\n{\"name\": \"pdf\", \"arguments\": {\"request\":\"Convert the file.\"}}\n</tool_call>"})"));
  EXPECT_EQ(inline_body["messages"][4], json::parse(R"({"role": "user", "content":
      "<tool_response>\nPDF skill text.\n</tool_response>"})"));
  // Completions: the same text, one prompt.
  const std::string prompt = PlainPrompt(request, messages);
  EXPECT_TRUE(prompt.starts_with("Act.\nSkill tools:\n# Tools\n")) << prompt;
  EXPECT_TRUE(
      prompt.ends_with("Convert the file.\n<tool_call>\n{\"name\": \"pdf\", "
                       "\"arguments\": {\"request\":\"Convert the file.\"}}\n"
                       "</tool_call>\n<tool_response>\nPDF skill text.\n"
                       "</tool_response>"))
      << prompt;
}

TEST(ChatStreamTest, StreamedToolCallFragmentsAreGeneratedText) {
  ChatStream stream;
  stream.OnEventData(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})", 10);
  stream.OnEventData(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",)"
                     R"("type":"function","function":{"name":"pdf","arguments":""}}]}}]})",
                     20);
  stream.OnEventData(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,)"
                     R"("function":{"arguments":"{\"a\":1}"}}]}}]})",
                     30);
  EXPECT_EQ(stream.num_content_chunks(), 2);
  EXPECT_EQ(stream.first_content_ms(), 20);
  EXPECT_EQ(stream.reply(), "pdf{\"a\":1}");
}

TEST(BenchServeFiguresTest, PercentilesInterpolateAndSkipMissing) {
  TimeSummary t = SummarizeTimes({40, 10, 30, 20, -1});
  EXPECT_EQ(t.count, 4);
  EXPECT_DOUBLE_EQ(t.mean, 25);
  EXPECT_DOUBLE_EQ(t.p50, 25);
  EXPECT_DOUBLE_EQ(t.p90, 37);
  EXPECT_EQ(SummarizeTimes({}).count, 0);

  std::vector<RequestMeasurement> requests(3);
  requests[0].phase = "index";
  requests[0].ttft_ms = 5;
  requests[0].usage.prompt_tokens = 100;
  requests[0].usage.tokens_new = 100;
  requests[1].phase = "query";
  requests[1].ttft_ms = 2;
  requests[1].usage.tokens_reused = 90;
  requests[2].phase = "query";
  requests[2].ttft_ms = 4;
  requests[2].usage.tokens_reused = 80;
  std::vector<PhaseSummary> phases = SummarizeServeBench(requests);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].phase, "index");
  EXPECT_EQ(phases[0].prompt_tokens, 100);
  EXPECT_EQ(phases[1].num_requests, 2);
  EXPECT_DOUBLE_EQ(phases[1].ttft_ms.mean, 3);
  EXPECT_EQ(phases[1].tokens_reused, 170);
  EXPECT_EQ(phases[1].prompt_tokens, -1);  // nobody said

  ServeBenchRun run{.trace = "docqa", .url = "http://x", .model = "m", .requests = requests};
  const std::string text = ServeBenchText(run);
  EXPECT_NE(text.find("query: 2 requests; TTFT mean 3.0 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("reused 170"), std::string::npos) << text;
  json j = ServeBenchJson(run);
  EXPECT_EQ(j["summary"][1]["tokens_reused"], 170);
  EXPECT_TRUE(j["requests"][1]["prompt_tokens"].is_null());
}

TEST(ServeClientTest, RejectsBadUrls) {
  for (const char* url : {"ftp://x", "https://x", "http://", "http://h:0", "http://h:99999",
                          "http://h:port", "localhost:8080"}) {
    Result<std::unique_ptr<ServeClient>> client = ServeClient::Create({.url = url});
    ASSERT_FALSE(client.ok()) << url;
    EXPECT_EQ(client.error().code(), StatusCode::kInvalidArgument) << url;
  }
  EXPECT_TRUE(ServeClient::Create({.url = "http://127.0.0.1:8080/prefix/"}).ok());
}

// A small OpenAI-style server: /v1/models, and /v1/chat/completions answering each request
// with `reply` in three pieces (an event split across writes, \r\n line ends, a comment),
// then usage and `reprise`. Records the request bodies.
class FakeServer {
 public:
  // `send_reprise` false: the final chunk has OpenAI's usage only, no `reprise` object.
  explicit FakeServer(std::string owned_by = "reprise", bool send_reprise = true) {
    server_.Get("/v1/models", [owned_by](const httplib::Request&, httplib::Response& res) {
      res.set_content(json({{"object", "list"},
                            {"data", {{{"id", "tiny"}, {"owned_by", owned_by}}}}})
                          .dump(),
                      "application/json");
    });
    server_.Post("/v1/completions", [this, send_reprise, owned_by](const httplib::Request& req,
                                                                   httplib::Response& res) {
      Answer(req, res, send_reprise, owned_by, /*chat=*/false);
    });
    server_.Post("/v1/chat/completions", [this, send_reprise, owned_by](const httplib::Request& req,
                                                                        httplib::Response& res) {
      Answer(req, res, send_reprise, owned_by, /*chat=*/true);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the listen loop has started would be lost and join() would wait forever.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<json> bodies() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bodies_;
  }
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mutex_);
    return paths_;
  }
  std::vector<std::chrono::steady_clock::time_point> arrivals() {
    std::lock_guard<std::mutex> lock(mutex_);
    return arrivals_;
  }

 private:
  // Answers with "reply number <n> from <owned_by>" (so that replies differ between servers).
  void Answer(const httplib::Request& req, httplib::Response& res, bool send_reprise,
              const std::string& owned_by, bool chat) {
    const auto chunk = [chat](std::string_view text) {
      return chat ? Chunk(text) : TextChunk(text);
    };
    json body = json::parse(req.body, nullptr, false);
    int turn = 0;  // this request's number, 1-based
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bodies_.push_back(body);
      paths_.push_back(req.path);
      arrivals_.push_back(std::chrono::steady_clock::now());
      turn = static_cast<int>(bodies_.size());
    }
    if (body.is_object() && body.contains("max_tokens") && body["max_tokens"] == 999) {
      res.status = 400;
      res.set_content(R"({"error":{"message":"max_tokens too large","type":)"
                      R"("invalid_request_error","code":"max_tokens"}})",
                      "application/json");
      return;
    }
    if (body.is_object() && body.contains("max_tokens") && body["max_tokens"] == 998) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        sink.write("data: {broken\n\n", 15);
        sink.write("data: [DONE]\n\n", 14);
        sink.done();
        return true;
      });
      return;
    }
    res.set_chunked_content_provider("text/event-stream", [turn, send_reprise, owned_by, chunk](
                                                              size_t, httplib::DataSink& sink) {
      auto write = [&](const std::string& s) { sink.write(s.data(), s.size()); };
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const std::string first = "data: " + chunk("reply") + "\r\n\r\n";
      write(first.substr(0, 10));
      write(first.substr(10));
      write(": keep-alive\n\n");
      for (const std::string& piece :
           {std::string(" number"), " " + std::to_string(turn) + " from " + owned_by}) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        write("data: " + chunk(piece) + "\n\n");
      }
      json final_chunk = json::parse(kFinalChunk);
      if (!send_reprise) final_chunk.erase("reprise");
      write("data: " + final_chunk.dump() + "\n\ndata: [DONE]\n\n");
      sink.done();
      return true;
    });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<json> bodies_;
  std::vector<std::string> paths_;
  std::vector<std::chrono::steady_clock::time_point> arrivals_;
};

TEST(ServeClientTest, StreamsAChatCompletionAndMeasuresIt) {
  FakeServer server;
  Result<std::unique_ptr<ServeClient>> client = ServeClient::Create({.url = server.url()});
  ASSERT_TRUE(client.ok());
  Result<ModelInfo> model = (*client)->FindModel("");
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  EXPECT_EQ(model->id, "tiny");
  EXPECT_EQ(model->owned_by, "reprise");
  EXPECT_EQ((*client)->FindModel("other").error().code(), StatusCode::kNotFound);

  Result<RequestMeasurement> m =
      (*client)->Send(BuildChatBody(DocRequest(), {{"user", "Where is Paris?"}}, {}));
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m->reply, "reply number 1 from reprise");
  EXPECT_EQ(m->num_content_chunks, 3);
  EXPECT_EQ(m->num_malformed_events, 0);
  EXPECT_EQ(m->usage.cached_tokens, 96);
  EXPECT_EQ(m->usage.tokens_reused, 86);
  // The server waits 20 ms before the first chunk and 10 ms between the others.
  EXPECT_GE(m->ttft_ms, 15);
  EXPECT_LE(m->ttft_ms, m->latency_ms);
  EXPECT_GT(m->decode_tokens_per_second, 0);
  ASSERT_EQ(server.bodies().size(), 1u);
  EXPECT_EQ(server.bodies()[0]["stream"], true);
}

TEST(ServeClientTest, ReportsHttpErrorsMalformedStreamsAndRefusedConnections) {
  FakeServer server;
  Result<std::unique_ptr<ServeClient>> client = ServeClient::Create({.url = server.url()});
  ASSERT_TRUE(client.ok());
  json body = BuildChatBody(DocRequest(), {{"user", "x"}}, {.max_tokens = 999});
  Result<RequestMeasurement> m = (*client)->Send(body);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.error().message().find("HTTP 400"), std::string::npos) << m.error().message();
  EXPECT_NE(m.error().message().find("max_tokens too large"), std::string::npos);

  m = (*client)->Send(BuildChatBody(DocRequest(), {{"user", "x"}}, {.max_tokens = 998}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), StatusCode::kCorrupt);
  EXPECT_NE(m.error().message().find("1 malformed"), std::string::npos) << m.error().message();

  // A port nobody listens on: the server above, once stopped.
  std::string url;
  {
    FakeServer gone;
    url = gone.url();
  }
  Result<std::unique_ptr<ServeClient>> refused = ServeClient::Create({.url = url});
  ASSERT_TRUE(refused.ok());
  Result<ModelInfo> model = (*refused)->FindModel("");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(model.error().message().find("cannot reach"), std::string::npos);
}

// Every server is sent the same prompts: the chat's history holds the dataset's replies, not
// the server's (which differ here: each fake names itself), through either endpoint.
TEST(RunServeBenchTest, ChatSessionReplaysTheDatasetsRepliesToEveryServer) {
  auto data = testing_support::SharedDataDir();
  if (!data)
    GTEST_SKIP() << "shared data not found (set REPRISE_DATA_DIR or provide ../shared/data)";
  for (const ServeEndpoint endpoint : {ServeEndpoint::kChat, ServeEndpoint::kCompletions}) {
    std::vector<std::vector<json>> sent;
    for (const char* owner : {"reprise", "llamacpp"}) {
      FakeServer server(owner);
      ServeBenchOptions options{
          .url = server.url(), .trace = "chat-session", .data_dir = *data, .num_requests = 3};
      options.endpoint = endpoint;
      int num_progress = 0;
      Result<ServeBenchRun> run =
          RunServeBench(options, [&](const RequestMeasurement&, int, int) { ++num_progress; });
      ASSERT_TRUE(run.ok()) << run.error().ToString();
      EXPECT_EQ(num_progress, 3);
      EXPECT_EQ(run->model, "tiny");
      EXPECT_EQ(run->endpoint, endpoint);
      EXPECT_EQ(run->requests[0].reply, "reply number 1 from " + std::string(owner));
      std::vector<json> bodies = server.bodies();
      ASSERT_EQ(bodies.size(), 3u);
      EXPECT_EQ(server.paths()[0], ServeEndpointPath(endpoint));
      EXPECT_EQ(bodies[2]["model"], "tiny");
      for (json& body : bodies) body.erase("model");
      sent.push_back(std::move(bodies));
    }
    EXPECT_EQ(sent[0], sent[1]) << ServeEndpointName(endpoint);
    const json& third = sent[0][2];
    if (endpoint == ServeEndpoint::kChat) {
      // Turn 3 carries turns 1 and 2 with the other speaker's answers from the data.
      const json& messages = third["messages"];
      ASSERT_EQ(messages.size(), 6u);
      EXPECT_EQ(messages[2]["role"], "assistant");
      EXPECT_TRUE(messages[2]["content"].get<std::string>().starts_with("Melanie: "));
      EXPECT_TRUE(messages[4]["content"].get<std::string>().starts_with("Melanie: "));
    } else {
      const std::string prompt = third["prompt"].get<std::string>();
      EXPECT_NE(prompt.find("\nMelanie: "), std::string::npos) << prompt;
      EXPECT_EQ(prompt.find("reply number"), std::string::npos) << prompt;
      EXPECT_TRUE(prompt.starts_with(workload::kChatSessionSystemPrompt));
    }
  }

  FakeServer server;
  ServeBenchOptions options{
      .url = server.url(), .trace = "docqa", .data_dir = *data, .num_requests = 2};
  Result<ServeBenchRun> run = RunServeBench(options, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->documents, DocumentsMode::kField);  // auto, for a Reprise server
  std::vector<json> bodies = server.bodies();
  EXPECT_TRUE(bodies.back().contains("documents"));
  EXPECT_EQ(run->requests.front().phase, "index");
  EXPECT_EQ(run->requests.back().phase, "query");
  EXPECT_NE(ServeBenchText(*run).find("index: "), std::string::npos);
  // With /v1/completions the documents are part of the text, for every server.
  options.endpoint = ServeEndpoint::kCompletions;
  run = RunServeBench(options, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->documents, DocumentsMode::kInline);
  EXPECT_NE(server.bodies().back()["prompt"].get<std::string>().find("\nDocument "),
            std::string::npos);
  options.documents = DocumentsMode::kField;
  EXPECT_EQ(RunServeBench(options, nullptr).error().code(), StatusCode::kInvalidArgument);
}

// Reuse recall: the oracle's mask (here a stand-in: nothing reusable in the first request, the
// first 100 of 120 tokens after) against the server's found_runs [0, 10) and [20, 115): found
// = 10 + 80 = 90 of 100 reusable, token by token; for a server without found_runs, its
// cached_tokens (96) as the prompt's start: 96 of 100; cached_tokens beside it for both.
TEST(RunServeBenchTest, RecallIntersectsFoundTokensWithTheOraclesMask) {
  auto data = testing_support::SharedDataDir();
  if (!data)
    GTEST_SKIP() << "shared data not found (set REPRISE_DATA_DIR or provide ../shared/data)";
  for (bool reprise : {true, false}) {
    FakeServer server(reprise ? "reprise" : "llamacpp", reprise);
    std::vector<json> counted;
    ServeBenchOptions options{
        .url = server.url(), .trace = "chat-session", .data_dir = *data, .num_requests = 3};
    options.reusable_mask = [&counted](const json& body,
                                       ServeEndpoint) -> Result<std::vector<uint8_t>> {
      counted.push_back(body);
      std::vector<uint8_t> mask(120, 0);
      if (counted.size() > 1) std::fill(mask.begin(), mask.begin() + 100, 1);
      return mask;
    };
    Result<ServeBenchRun> run = RunServeBench(options, nullptr);
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    ASSERT_EQ(counted.size(), 3u);
    EXPECT_EQ(counted, server.bodies());  // each body exactly as sent, in order
    EXPECT_EQ(run->requests[0].tokens_reusable, 0);
    EXPECT_EQ(run->requests[0].tokens_found, 0);
    EXPECT_EQ(run->requests[2].tokens_reusable, 100);
    EXPECT_EQ(run->requests[2].tokens_found, reprise ? 90 : 96);
    EXPECT_EQ(run->requests[2].tokens_cached, 96);
    EXPECT_EQ(run->requests[2].oracle_prompt_tokens, 120);
    const std::vector<PhaseSummary> phases = SummarizeServeBench(run->requests);
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_EQ(phases[0].tokens_reusable, 200);
    EXPECT_EQ(phases[0].tokens_found, reprise ? 180 : 192);
    EXPECT_EQ(phases[0].tokens_cached, 3 * 96);
    EXPECT_DOUBLE_EQ(phases[0].reuse_recall, reprise ? 0.9 : 0.96);
    EXPECT_DOUBLE_EQ(phases[0].cached_recall, 3 * 96 / 200.0);
    EXPECT_EQ(phases[0].num_prompt_mismatches, 0);  // the fake says 120 prompt tokens
    const std::string text = ServeBenchText(*run);
    EXPECT_NE(text.find(reprise ? "found in the cache 180 of them (recall 90.0%)"
                                : "found in the cache 192 of them (recall 96.0%)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("cached_tokens 288 (144.0% of reusable)"), std::string::npos) << text;
    EXPECT_EQ(text.find("WARNING"), std::string::npos) << text;
    const json j = ServeBenchJson(*run);
    EXPECT_EQ(j["summary"][0]["tokens_reusable"], 200);
    EXPECT_EQ(j["summary"][0]["prompt_mismatches"], 0);
    EXPECT_EQ(j["requests"][2]["tokens_cached"], 96);
  }
  // A prompt of another length than the oracle's is flagged (and runs past it are cut).
  RequestMeasurement m;
  m.phase = "query";
  m.usage.prompt_tokens = 120;
  m.usage.has_found_runs = true;
  m.usage.found_runs = {{0, 10}, {20, 115}};
  SetRecall(std::vector<uint8_t>(50, 1), m);
  EXPECT_EQ(m.tokens_found, 10 + 30);
  const std::vector<PhaseSummary> phases = SummarizeServeBench({m});
  EXPECT_EQ(phases[0].num_prompt_mismatches, 1);
  EXPECT_NE(ServeBenchText({.requests = {m}}).find("WARNING: 1 of 1 requests"), std::string::npos);
  // A server that names no tokens and no cached count: nothing found is claimed.
  m.usage.has_found_runs = false;
  SetRecall(std::vector<uint8_t>(120, 1), m);
  EXPECT_EQ(m.tokens_found, -1);

  // Without an oracle, nothing is claimed.
  FakeServer server;
  Result<ServeBenchRun> run = RunServeBench(
      {.url = server.url(), .trace = "chat-session", .data_dir = *data, .num_requests = 1},
      nullptr);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->requests[0].tokens_reusable, -1);
  EXPECT_EQ(SummarizeServeBench(run->requests)[0].reuse_recall, -1);
  EXPECT_EQ(SummarizeServeBench(run->requests)[0].num_prompt_mismatches, -1);
  EXPECT_EQ(ServeBenchText(*run).find("reusable"), std::string::npos);
  // An oracle that fails stops the run before the request is sent, naming it.
  ServeBenchOptions failing{
      .url = server.url(), .trace = "chat-session", .data_dir = *data, .num_requests = 2};
  failing.reusable_mask = [](const json&, ServeEndpoint) -> Result<std::vector<uint8_t>> {
    return InvalidArgumentError("bad body");
  };
  const size_t sent = server.bodies().size();
  run = RunServeBench(failing, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("request 1 (chat"), std::string::npos)
      << run.error().message();
  EXPECT_EQ(server.bodies().size(), sent);
}

// Side by side: each request goes to both servers, the first of the turn alternating; each
// server gets its own documents form of the same prompt; the oracle counts each prompt once.
TEST(RunServeBenchTest, ServersSideBySideTakeTurnsOnTheSamePrompts) {
  auto data = testing_support::SharedDataDir();
  if (!data)
    GTEST_SKIP() << "shared data not found (set REPRISE_DATA_DIR or provide ../shared/data)";
  FakeServer reprise("reprise"), other("llamacpp", /*send_reprise=*/false);
  int num_counted = 0;
  ServeBenchOptions options{.trace = "docqa", .data_dir = *data, .num_requests = 2};
  options.reusable_mask = [&](const json&, ServeEndpoint) -> Result<std::vector<uint8_t>> {
    ++num_counted;
    return std::vector<uint8_t>(120, 1);
  };
  int num_progress = 0;
  Result<std::vector<ServeBenchRun>> runs =
      RunServeBenchSideBySide(options, {reprise.url(), other.url()},
                              [&](const RequestMeasurement&, int, int) { ++num_progress; });
  ASSERT_TRUE(runs.ok()) << runs.error().ToString();
  ASSERT_EQ(runs->size(), 2u);
  const size_t num_requests = (*runs)[0].requests.size();
  ASSERT_GT(num_requests, 2u);
  EXPECT_EQ((*runs)[1].requests.size(), num_requests);
  EXPECT_EQ(num_counted, static_cast<int>(num_requests));
  EXPECT_EQ(num_progress, 2 * static_cast<int>(num_requests));
  EXPECT_EQ((*runs)[0].documents, DocumentsMode::kField);
  EXPECT_EQ((*runs)[1].documents, DocumentsMode::kInline);
  EXPECT_EQ((*runs)[1].url, other.url());
  const std::vector<json> a = reprise.bodies(), b = other.bodies();
  ASSERT_EQ(a.size(), num_requests);
  ASSERT_EQ(b.size(), num_requests);
  EXPECT_TRUE(a[0].contains("documents"));
  EXPECT_FALSE(b[0].contains("documents"));
  // The first server of each turn alternates.
  const auto ta = reprise.arrivals(), tb = other.arrivals();
  for (size_t i = 0; i < num_requests; ++i) {
    EXPECT_EQ(ta[i] < tb[i], i % 2 == 0) << "request " << i;
  }
  for (size_t i = 0; i < num_requests; ++i) {
    EXPECT_EQ((*runs)[0].requests[i].id, (*runs)[1].requests[i].id);
    EXPECT_EQ((*runs)[1].requests[i].tokens_found, 96);  // its cached start
  }
  EXPECT_NE(ServeComparisonText(*runs).find("side by side, query: " + other.url()),
            std::string::npos)
      << ServeComparisonText(*runs);
  EXPECT_EQ(ServeComparisonJson(*runs)["runs"].size(), 2u);

  options.clients = 2;
  EXPECT_EQ(RunServeBenchSideBySide(options, {reprise.url(), other.url()}, nullptr).error().code(),
            StatusCode::kInvalidArgument);
}

TEST(BenchServeFiguresTest, ComparisonPairsRequestsByIndex) {
  ServeBenchRun first{.url = "a"}, second{.url = "b"};
  const double a[] = {10, 20, 30}, b[] = {20, 60, 30};
  for (int i = 0; i < 3; ++i) {
    first.requests.push_back({.phase = "query", .ttft_ms = a[i]});
    second.requests.push_back({.phase = "query", .ttft_ms = b[i]});
  }
  const std::vector<ServeComparison> rows = CompareServeRuns({first, second});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].url, "b");
  EXPECT_EQ(rows[0].num_requests, 3);
  EXPECT_DOUBLE_EQ(rows[0].mean_ratio, 110.0 / 60.0);
  EXPECT_DOUBLE_EQ(rows[0].p50_ratio, 30.0 / 20.0);
  EXPECT_DOUBLE_EQ(rows[0].later_mean_ratio, 90.0 / 50.0);
  EXPECT_DOUBLE_EQ(rows[0].median_request_ratio, 2.0);
}

// --clients N sends the trace in waves of N requests at once (each answer takes >= 40 ms
// here, so three requests sent one after the other would arrive >= 80 ms apart), keeps the trace's
// order in the results and reports the aggregate completion rate.
TEST(RunServeBenchTest, ClientsSendRequestsAtOnceInWaves) {
  auto data = testing_support::SharedDataDir();
  if (!data)
    GTEST_SKIP() << "shared data not found (set REPRISE_DATA_DIR or provide ../shared/data)";
  FakeServer server;
  Result<ServeBenchRun> run = RunServeBench({.url = server.url(),
                                             .trace = "agent",
                                             .data_dir = *data,
                                             .num_requests = 6,
                                             .context_tokens = 100000,
                                             .clients = 3},
                                            nullptr);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  ASSERT_EQ(run->requests.size(), 6u);
  EXPECT_EQ(run->clients, 3);
  EXPECT_GT(run->wall_ms, 0.0);
  EXPECT_EQ(AggregateCompletionTokens(*run), 6 * 3);  // the fake reports 3 tokens each
  for (size_t i = 0; i < run->requests.size(); ++i) {
    EXPECT_EQ(run->requests[i].id.rfind("agent:", 0), 0u) << run->requests[i].id;
  }
  const std::vector<std::chrono::steady_clock::time_point> arrivals = server.arrivals();
  ASSERT_EQ(arrivals.size(), 6u);
  for (size_t wave = 0; wave < 6; wave += 3) {
    const auto [first, last] = std::minmax_element(arrivals.begin() + static_cast<long>(wave),
                                                   arrivals.begin() + static_cast<long>(wave) + 3);
    EXPECT_LT(*last - *first, std::chrono::milliseconds(60)) << "wave " << wave / 3;
  }
  EXPECT_NE(ServeBenchText(*run).find("with 3 clients at once"), std::string::npos);
  EXPECT_EQ(ServeBenchJson(*run)["clients"], 3);

  // One conversation cannot be sent by several clients.
  run = RunServeBench({.url = server.url(),
                       .trace = "chat-session",
                       .data_dir = *data,
                       .num_requests = 2,
                       .clients = 2},
                      nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code(), StatusCode::kInvalidArgument);
}

TEST(RunServeBenchTest, InlineForOtherServersAndErrorsNameTheRequest) {
  auto data = testing_support::SharedDataDir();
  if (!data) GTEST_SKIP() << "shared data not found (set REPRISE_DATA_DIR or provide ../shared/data)";
  FakeServer server("llamacpp");
  Result<ServeBenchRun> run = RunServeBench(
      {.url = server.url(), .trace = "agent", .data_dir = *data, .num_requests = 1,
       .max_tokens = 8, .context_tokens = 100000},
      nullptr);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->documents, DocumentsMode::kInline);
  const json body = server.bodies().back();
  EXPECT_FALSE(body.contains("skills"));
  EXPECT_TRUE(body["messages"][1]["content"].get<std::string>().starts_with("Skill "));

  run = RunServeBench({.url = server.url(), .trace = "agent", .data_dir = *data,
                       .num_requests = 1, .max_tokens = 999, .context_tokens = 100000},
                      nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("request 1 of 1 (agent:"), std::string::npos)
      << run.error().message();
}

}  // namespace
}  // namespace reprise::cli
