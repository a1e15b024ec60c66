// The server against hostile and careless clients, over raw sockets on 127.0.0.1 (label
// `hostile`: it runs in the sanitizer build too). Each test is a reproduction of issue 41 —
// what a few lines of Python did to the server on cpp-httplib — plus a load test with every
// kind of client at once. Bounds on time are generous ("promptly" is seconds, not
// milliseconds) so that a loaded 2-core machine or a sanitizer build does not fail them.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "convert/model_maker.h"
#include "server/http_server.h"
#include "server/server_test_support.h"
#include "support/loopback_client.h"
#include "support/temp_dir.h"

namespace reprise::server {
namespace {

using nlohmann::json;
using testing_support::GetRequest;
using testing_support::LoopbackClient;
using testing_support::PostRequest;
using testing_support::RawResponse;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kDemoModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

using test_support::kAddressSanitizer;

// "Promptly": what /health must answer within while the server is under attack or load.
constexpr milliseconds kPrompt(2000);
// What any answer that involves generation must come within (a sanitizer build is slow).
constexpr milliseconds kPatient(120000);

json ChatBody(const std::string& user, int max_tokens, bool stream = false) {
  return json{{"messages", json::array({{{"role", "user"}, {"content", user}}})},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"stream", stream}};
}

std::vector<json> Events(const std::string& body, bool* done) {
  return test_support::SseEvents(body, done);
}

// The reply text of a chat answer, streamed or whole; "" when it is not a complete 200.
std::string ChatText(const RawResponse& response) {
  if (response.status != 200 || !response.complete) return "";
  if (response.headers.count("content-type") &&
      response.headers.at("content-type").find("text/event-stream") != std::string::npos) {
    bool done = false;
    std::string text;
    for (const json& event : Events(response.body, &done)) {
      if (!event.contains("choices") || event["choices"].empty()) continue;
      const json& delta = event["choices"][0]["delta"];
      if (delta.contains("content")) text += delta["content"].get<std::string>();
    }
    return done ? text : "";
  }
  const json body = json::parse(response.body, nullptr, false);
  if (!body.is_object() || !body.contains("choices")) return "";
  return body["choices"][0]["message"]["content"].get<std::string>();
}

// The value of one series ("name" or "name{labels}") in Prometheus text; 0 when absent.
double Metric(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n')
      return std::strtod(text.c_str() + at + series.size(), nullptr);
    at += series.size();
  }
  return 0.0;
}

// Peak resident memory of this process so far, MiB.
double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

std::string Gzip(const std::string& text) { return test_support::Compress(text, 15 + 16); }

// Waits until `done` holds, polling, at most `timeout`; returns whether it held.
template <typename Predicate>
bool WaitFor(Predicate done, milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

class HostileClientTest : public ::testing::Test {
 protected:
  // A model slow enough that a prefill of a long prompt takes many graph calls and a
  // generation lasts long enough to be caught running: the tiny-256 shape with 32 layers (on 2
  // Zen 4 cores: a 1400-token prefill in about 0.9 s, 12 graph calls; 150 tokens/s).
  static void SetUpTestSuite() {
    dir_ = new testing_support::TempDir();
    slow_model_ = dir_->path() + "/slow.gguf";
    convert::MakeModelOptions make;
    make.shape = "tiny-256";
    make.num_layers = 32;
    make.weight_type = DType::kQ8_0;
    Result<convert::MakeModelSummary> made = convert::MakeModel(make, slow_model_);
    ASSERT_TRUE(made.ok()) << made.error().ToString();
  }
  static void TearDownTestSuite() { delete dir_; }

  void Start(ServerOptions options = {}, int sessions = 2, const std::string& model = kDemoModel) {
    server_ = std::make_unique<test_support::RunningServer>(model, sessions, 2048, options);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }

  // Drains the server as SIGTERM does and waits for Serve to return.
  void StopAndWait() {
    if (server_ && server_->ok()) server_->Stop();
  }

  void TearDown() override { StopAndWait(); }

  LoopbackClient Connect() {
    std::optional<LoopbackClient> client = LoopbackClient::Connect(server_->port());
    EXPECT_TRUE(client.has_value()) << "cannot connect";
    return client ? std::move(*client) : LoopbackClient();
  }

  // One request on a connection of its own; status 0 when no answer came within `timeout`.
  RawResponse Ask(const std::string& request, milliseconds timeout = kPatient) {
    std::optional<LoopbackClient> client = LoopbackClient::Connect(server_->port());
    if (!client || !client->Send(request)) return {};
    std::optional<RawResponse> response = client->ReadResponse(timeout);
    return response ? *response : RawResponse{};
  }

  std::string MetricsText() { return Ask(GetRequest("/metrics"), kPatient).body; }
  // Requests running, waiting and answered, as /metrics says.
  double RequestsTaken() {
    const std::string text = MetricsText();
    return Metric(text, "reprise_requests_running") + Metric(text, "reprise_queue_length") +
           Metric(text, R"(reprise_requests_total{endpoint="chat",code="200"})");
  }

  // The time /health takes to answer 200 on a fresh connection; kPatient when it fails.
  milliseconds HealthLatency(milliseconds timeout = kPatient) {
    const Clock::time_point start = Clock::now();
    RawResponse health = Ask(GetRequest("/health"), timeout);
    if (health.status != 200 || !health.complete) return kPatient;
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  }

  // Three chat requests on threads of their own, each sent once the server has taken the one
  // before: with one session the first (streamed, `first_tokens` long) runs and the second
  // (streamed) and third (whole), 24 tokens each, wait behind it. The threads fill `answers`.
  std::vector<std::thread> RunningAndTwoWaiting(int first_tokens,
                                                std::vector<RawResponse>& answers) {
    std::vector<std::thread> clients;
    for (int i = 0; i < 3; ++i) {
      clients.emplace_back([this, &answers, first_tokens, i] {
        answers[i] = Ask(PostRequest(
            "/v1/chat/completions",
            ChatBody("request " + std::to_string(i), i == 0 ? first_tokens : 24, i != 2).dump()));
      });
      EXPECT_TRUE(WaitFor([&] { return RequestsTaken() >= i + 1; }, kPatient)) << i;
    }
    return clients;
  }

  static void ExpectOpenAiError(const RawResponse& response, int status, const std::string& what) {
    EXPECT_EQ(response.status, status) << what << ": " << response.head << response.body;
    EXPECT_TRUE(response.complete) << what;
    const json body = json::parse(response.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << what << ": " << response.body;
    EXPECT_TRUE(body["error"]["message"].is_string()) << what;
  }

  static testing_support::TempDir* dir_;
  static std::string slow_model_;
  std::unique_ptr<test_support::RunningServer> server_;
};
testing_support::TempDir* HostileClientTest::dir_ = nullptr;
std::string HostileClientTest::slow_model_;

// Issue 41, 1: 200,000 nested arrays in a message's content (400 KB) killed the process with
// SIGSEGV; so did 100,000 levels in a tool's parameters or in a content part.
TEST_F(HostileClientTest, DeeplyNestedBodiesAreRefusedAndTheServerLives) {
  Start();
  auto nested = [](int levels, char open, const std::string& inner, char close) {
    return std::string(levels, open) + inner + std::string(levels, close);
  };
  const std::string arrays = nested(200000, '[', "", ']');
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"content", R"({"messages":[{"role":"user","content":)" + arrays + "}]}"},
      {"tool parameters",
       R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":)" +
           objects + "}}]}"},
      {"content part",
       R"({"messages":[{"role":"user","content":[{"type":"text","text":)" + objects + "}]}]}"},
      {"tool type",
       R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":)" + arrays + "}]}"},
      {"unknown field", R"({"messages":[{"role":"user","content":"hi"}],"x":)" + objects + "}"},
  };
  for (const auto& [where, body] : bodies) {
    const RawResponse response = Ask(PostRequest("/v1/chat/completions", body));
    ExpectOpenAiError(response, 400, where);
    EXPECT_NE(response.body.find("nested"), std::string::npos) << where << ": " << response.body;
  }
  // A legitimately nested tool schema is still taken.
  json tools = ChatBody("hi", 2);
  tools["tools"] = json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "f"},
          {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "array"}}}}}}}}}}});
  EXPECT_EQ(Ask(PostRequest("/v1/chat/completions", tools.dump())).status, 200);
  EXPECT_LT(HealthLatency(), kPatient);
}

// Issue 41, 2: 204 KB of gzip inflated to a 200 MB prompt (31 s, 6.8 GB) before a 400; the
// limit on the body applies to its inflated size.
TEST_F(HostileClientTest, GzipBodyIsLimitedByItsInflatedSize) {
  ServerOptions options;
  options.max_body_bytes = 1 << 20;
  Start(options);
  // A small gzip body is taken as it would be plain.
  const std::string small = ChatBody("Once upon a time", 4).dump();
  const RawResponse plain = Ask(PostRequest("/v1/chat/completions", small));
  const RawResponse zipped =
      Ask(PostRequest("/v1/chat/completions", Gzip(small), "Content-Encoding: gzip\r\n"));
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(zipped.status, 200) << zipped.body;
  EXPECT_EQ(ChatText(zipped), ChatText(plain));

  // 256 MiB of prompt in about 256 KB on the wire.
  const std::string prompt(256 << 20, 'a');
  const std::string bomb = Gzip(R"({"messages":[{"role":"user","content":")" + prompt + "\"}]}");
  ASSERT_LT(bomb.size(), options.max_body_bytes);
  const double peak_before_mb = PeakRssMb();
  const RawResponse refused =
      Ask(PostRequest("/v1/chat/completions", bomb, "Content-Encoding: gzip\r\n"));
  ExpectOpenAiError(refused, 413, "gzip bomb");
  if (!kAddressSanitizer) {  // ASan's quarantine and shadow memory say nothing here
    EXPECT_LT(PeakRssMb() - peak_before_mb, 64.0) << "the body was inflated past the limit";
  }
  // Not valid gzip data, and an encoding the server does not know.
  ExpectOpenAiError(
      Ask(PostRequest("/v1/chat/completions", "not gzip at all", "Content-Encoding: gzip\r\n")),
      400, "corrupt gzip");
  ExpectOpenAiError(Ask(PostRequest("/v1/chat/completions", small, "Content-Encoding: br\r\n")),
                    415, "brotli");
  ExpectOpenAiError(Ask(PostRequest("/v1/chat/completions", Gzip(Gzip(small)),
                                    "Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n")),
                    415, "two Content-Encoding headers");
  EXPECT_LT(HealthLatency(), kPatient);
}

// Issue 41, 3: with one session busy, SIGTERM answered the two queued requests "200 OK",
// chunked, with no byte of body and no last chunk. They must finish.
TEST_F(HostileClientTest, DrainLetsRunningAndQueuedRequestsFinish) {
  ServerOptions options;
  options.drain_seconds = 600;
  Start(options, /*sessions=*/1, slow_model_);
  std::vector<RawResponse> answers(3);
  std::vector<std::thread> clients = RunningAndTwoWaiting(/*first_tokens=*/200, answers);
  EXPECT_EQ(Metric(MetricsText(), "reprise_queue_length"), 2) << "the first ended too soon";
  StopAndWait();
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answers[i].status, 200) << i << ": " << answers[i].head << answers[i].body;
    EXPECT_TRUE(answers[i].complete) << i;
    EXPECT_FALSE(ChatText(answers[i]).empty()) << i << ": " << answers[i].body;
  }
  EXPECT_TRUE(server_->served().ok()) << server_->served().ToString();
}

// ... and past --drain-seconds, what has not finished ends with a clean error: 503 before the
// status line, an SSE error event and [DONE] after it; never a 200 without a body.
TEST_F(HostileClientTest, DrainPastItsDeadlineEndsRequestsCleanly) {
  ServerOptions options;
  options.drain_seconds = 0;
  Start(options, /*sessions=*/1, slow_model_);
  std::vector<RawResponse> answers(3);
  std::vector<std::thread> clients = RunningAndTwoWaiting(/*first_tokens=*/2000, answers);
  StopAndWait();
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 3; ++i) {
    const RawResponse& answer = answers[i];
    EXPECT_TRUE(answer.complete) << i << ": " << answer.head << answer.body;
    if (answer.status == 200) {
      // Streamed: it ended with [DONE], after its text or after an error event.
      bool done = false;
      const std::vector<json> events = Events(answer.body, &done);
      EXPECT_TRUE(done) << i << ": " << answer.body;
      ASSERT_FALSE(events.empty()) << i;
      EXPECT_TRUE(events.back().contains("error") ||
                  !events.back()["choices"][0]["finish_reason"].is_null())
          << i << ": " << answer.body;
    } else {
      ExpectOpenAiError(answer, 503, "request " + std::to_string(i));
    }
  }
  // The queued ones never ran.
  EXPECT_EQ(answers[1].status, 503);
  EXPECT_EQ(answers[2].status, 503);
}

// Issue 41, 4: 80 connections that send a header line every few seconds held every worker
// thread, and /health timed out for as long as they lasted.
TEST_F(HostileClientTest, SlowClientsDoNotDelayHealth) {
  ServerOptions options;
  options.max_waiting = 0;  // the old pool: sessions + queue + 8 threads (9 here)
  Start(options, /*sessions=*/1);
  std::vector<LoopbackClient> slow;
  for (int i = 0; i < 80; ++i) {
    slow.push_back(Connect());
    slow.back().Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n");
  }
  std::vector<milliseconds> latencies;
  for (int round = 0; round < 6; ++round) {
    for (size_t i = 0; i < slow.size(); ++i) {
      slow[i].Send("X-Slow-" + std::to_string(round) + ": " + std::to_string(i) + "\r\n");
    }
    latencies.push_back(HealthLatency(kPrompt));
    const Clock::time_point start = Clock::now();
    RawResponse metrics = Ask(GetRequest("/metrics"), kPrompt);
    EXPECT_EQ(metrics.status, 200);
    EXPECT_LT(Clock::now() - start, kPrompt);
    std::this_thread::sleep_for(milliseconds(300));
  }
  for (milliseconds latency : latencies) EXPECT_LT(latency, kPrompt);
}

// Issue 41, 5: three requests in one write got one response; the rest were dropped and the
// connection idled until keep-alive timed out.
TEST_F(HostileClientTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  LoopbackClient client = Connect();
  const std::string completion =
      json{{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}}.dump();
  ASSERT_TRUE(client.Send(GetRequest("/health") + PostRequest("/v1/completions", completion) +
                          GetRequest("/v1/models")));
  std::optional<RawResponse> health = client.ReadResponse(kPatient);
  std::optional<RawResponse> generated = client.ReadResponse(kPatient);
  std::optional<RawResponse> models = client.ReadResponse(kPatient);
  ASSERT_TRUE(health && generated && models)
      << "a pipelined request was not answered: " << (health ? health->head : "no health")
      << (generated ? generated->head + generated->body : "no completion")
      << (models ? models->head : "no models");
  EXPECT_EQ(health->status, 200);
  EXPECT_NE(health->body.find("ok"), std::string::npos);
  EXPECT_EQ(generated->status, 200);
  EXPECT_EQ(json::parse(generated->body)["object"], "text_completion");
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(json::parse(models->body)["object"], "list");
  // The connection stays usable.
  ASSERT_TRUE(client.Send(GetRequest("/health")));
  std::optional<RawResponse> again = client.ReadResponse(kPatient);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  // More pipelined bytes than the server reads ahead while it answers (it stops reading
  // them, and must still answer and go on): a completion, then 2000 asks of /health.
  std::string many = PostRequest("/v1/completions", completion);
  for (int i = 0; i < 2000; ++i) many += GetRequest("/health");
  ASSERT_GT(many.size(), 64u * 1024);
  ASSERT_TRUE(client.Send(many));
  std::optional<RawResponse> first = client.ReadResponse(kPatient);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(json::parse(first->body)["object"], "text_completion");
  for (int i = 0; i < 2000; ++i) {
    std::optional<RawResponse> next = client.ReadResponse(kPatient);
    ASSERT_TRUE(next && next->status == 200) << "pipelined /health " << i;
  }
}

// Issue 41, 6: broken framing closed the connection without an answer.
TEST_F(HostileClientTest, BrokenFramingIsAnswered400) {
  Start();
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n";
  const std::string body = ChatBody("hi", 2).dump();
  const std::string length = std::to_string(body.size());
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"negative length", head + "Content-Length: -5\r\n\r\n" + body},
      {"huge length", head + "Content-Length: 99999999999999999999999\r\n\r\n" + body},
      {"two lengths", head + "Content-Length: " + length + "\r\nContent-Length: 7\r\n\r\n" + body},
      {"same length twice",
       head + "Content-Length: " + length + "\r\nContent-Length: " + length + "\r\n\r\n" + body},
      {"length and chunked",
       head + "Content-Length: " + length + "\r\nTransfer-Encoding: chunked\r\n\r\n" + body},
      {"bad chunk size",
       head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n"},
      {"chunk size overflow", head + "Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n" +
                                  body + "\r\n0\r\n\r\n"},
  };
  for (const auto& [what, request] : requests) {
    LoopbackClient client = Connect();
    ASSERT_TRUE(client.Send(request)) << what;
    std::optional<RawResponse> response = client.ReadResponse(kPatient);
    ASSERT_TRUE(response) << what << ": the connection closed without an answer";
    ExpectOpenAiError(*response, 400, what);
  }
  // A well-formed chunked body is taken.
  char size[32];
  std::snprintf(size, sizeof(size), "%zx", body.size());
  const RawResponse chunked =
      Ask(head + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(chunked.status, 200) << chunked.body;
}

// Issue 41, 6: the Authorization scheme is case-insensitive (RFC 7235) and may be followed by
// a tab; a request with two Authorization headers is refused rather than half-read.
TEST_F(HostileClientTest, AuthorizationIsReadAsTheRfcSays) {
  ServerOptions options;
  options.api_keys = {"key-a:alice"};
  Start(options);
  const std::string body = ChatBody("hi", 2).dump();
  for (const char* header : {"Authorization: Bearer key-a\r\n", "Authorization: bearer key-a\r\n",
                             "Authorization: BEARER key-a\r\n", "Authorization: Bearer\tkey-a\r\n",
                             "Authorization: Bearer   key-a  \r\n"}) {
    const RawResponse response = Ask(PostRequest("/v1/chat/completions", body, header));
    EXPECT_EQ(response.status, 200) << header << response.body;
  }
  for (const char* header :
       {"", "Authorization: Bearer key-b\r\n", "Authorization: Basic key-a\r\n",
        "Authorization: Bearerkey-a\r\n", "Authorization: key-a\r\n"}) {
    ExpectOpenAiError(Ask(PostRequest("/v1/chat/completions", body, header)), 401, header);
  }
  ExpectOpenAiError(
      Ask(PostRequest("/v1/chat/completions", body,
                      "Authorization: Bearer key-a\r\nAuthorization: Bearer key-b\r\n")),
      400, "two Authorization headers");
}

// Issue 41, 6: the small rules of a request body.
TEST_F(HostileClientTest, RequestFieldsAreCheckedAsDocumented) {
  Start();
  json empty_model = ChatBody("hi", 2);
  empty_model["model"] = "";
  ExpectOpenAiError(Ask(PostRequest("/v1/chat/completions", empty_model.dump())), 400,
                    "empty model");
  json tiny_top_p = ChatBody("hi", 2);
  tiny_top_p["top_p"] = 1e-300;  // in (0, 1]
  const RawResponse top_p = Ask(PostRequest("/v1/chat/completions", tiny_top_p.dump()));
  EXPECT_EQ(top_p.status, 200) << top_p.body;
  for (const json& document : {json{{"text", "a document"}}, json{{"id", nullptr}, {"text", "x"}},
                               json{{"id", 7}, {"text", "x"}}, json{{"id", ""}, {"text", "x"}}}) {
    json request = ChatBody("hi", 2);
    request["documents"] = json::array({document});
    ExpectOpenAiError(Ask(PostRequest("/v1/chat/completions", request.dump())), 400,
                      document.dump());
  }
  json named = ChatBody("hi", 2);
  named["documents"] = json::array({{{"id", "a.md"}, {"text", "a document"}}});
  EXPECT_EQ(Ask(PostRequest("/v1/chat/completions", named.dump())).status, 200);
}

// Issue 41, 7: a client that went away during its prompt's prefill was noticed at the first
// token only: the whole prompt was computed (and its KV cached) for nobody.
TEST_F(HostileClientTest, ClientGoneDuringPrefillCancelsIt) {
  Start({}, /*sessions=*/1, slow_model_);
  std::string long_prompt;
  for (int i = 0; i < 80; ++i) long_prompt += "the quick brown fox " + std::to_string(i) + " ";
  LoopbackClient client = Connect();
  ASSERT_TRUE(client.Send(
      PostRequest("/v1/chat/completions", ChatBody(long_prompt, 8, /*stream=*/true).dump())));
  // Gone once its prefill has started.
  ASSERT_TRUE(
      WaitFor([&] { return Metric(MetricsText(), "reprise_requests_running") == 1; }, kPatient));
  client.Close(/*reset=*/true);
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string text = MetricsText();
        return Metric(text, "reprise_requests_running") == 0 &&
               Metric(text, R"(reprise_requests_total{endpoint="chat",code="499"})") == 1;
      },
      kPatient));
  const std::string text = MetricsText();
  EXPECT_EQ(Metric(text, "reprise_requests_cancelled_total"), 1);
  // A completed prefill would have cached the prompt's chunks.
  EXPECT_EQ(Metric(text, "reprise_cached_chunks"), 0) << "the prefill ran to its end";
  EXPECT_EQ(Metric(text, "reprise_completion_tokens_total"), 0);
}

// A request's head and body must arrive within request_timeout of its first byte: a client
// that sends a byte every 100 ms (which a timeout restarted by each byte never stops) is cut
// off, in its head or in its body.
TEST_F(HostileClientTest, RequestDeadlineIsForTheWholeHeadAndBody) {
  ServerOptions options;
  options.request_timeout = milliseconds(1000);
  Start(options);
  LoopbackClient head = Connect();
  LoopbackClient body = Connect();
  ASSERT_TRUE(head.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"));
  ASSERT_TRUE(
      body.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                "Content-Length: 100000\r\n\r\n{"));
  bool head_closed = false;
  bool body_closed = false;
  const Clock::time_point start = Clock::now();
  while (!(head_closed && body_closed) && Clock::now() - start < seconds(30)) {
    if (!head_closed) {
      head.Send("X-Trickle: 1\r\n");
      head_closed = head.WaitForClose(milliseconds(50));
    }
    if (!body_closed) {
      body.Send(" ");
      body_closed = body.WaitForClose(milliseconds(50));
    }
  }
  EXPECT_TRUE(head_closed) << "a head sent a line at a time was never cut off";
  EXPECT_TRUE(body_closed) << "a body sent a byte at a time was never cut off";
  EXPECT_LT(HealthLatency(), kPrompt);
}

// A connection that waits for its next request longer than idle_timeout is closed; one that
// never sends a byte is closed at its first request's deadline.
TEST_F(HostileClientTest, IdleConnectionsAreClosed) {
  ServerOptions options;
  options.idle_timeout = milliseconds(300);
  options.request_timeout = milliseconds(1000);
  Start(options);
  LoopbackClient used = Connect();
  ASSERT_TRUE(used.Send(GetRequest("/health")));
  std::optional<RawResponse> health = used.ReadResponse(kPatient);
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  LoopbackClient silent = Connect();
  EXPECT_TRUE(used.WaitForClose(seconds(30)));
  EXPECT_TRUE(silent.WaitForClose(seconds(30)));
}

// Heads are capped in bytes and in header count (431), bodies in bytes (413, at once from
// the Content-Length, before the body is sent).
TEST_F(HostileClientTest, OversizedHeadsAndBodiesAreRefused) {
  ServerOptions options;
  options.max_body_bytes = 64 * 1024;
  Start(options);
  const std::string big_header = "X-Big: " + std::string(20000, 'a') + "\r\n";
  ExpectOpenAiError(Ask(GetRequest("/health", big_header)), 431, "20 KB header");
  std::string many;
  for (int i = 0; i < 150; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  ExpectOpenAiError(Ask(GetRequest("/health", many)), 431, "150 headers");
  LoopbackClient client = Connect();
  ASSERT_TRUE(
      client.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                  "Content-Length: 1000000000\r\n\r\n"));
  std::optional<RawResponse> refused = client.ReadResponse(kPatient);
  ASSERT_TRUE(refused) << "no answer before the body";
  ExpectOpenAiError(*refused, 413, "a body of 1 GB");
  // Within the caps all is well.
  std::string fine;
  for (int i = 0; i < 50; ++i) fine += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Ask(GetRequest("/health", fine)).status, 200);
}

// At most max_connections_per_client connections from one address and max_connections in
// all: one more is answered 503 and closed, and a place given back is taken again.
TEST_F(HostileClientTest, ConnectionCapsAnswer503) {
  ServerOptions options;
  options.max_connections = 6;
  options.max_connections_per_client = 4;
  Start(options);
  auto connect_from = [&](const std::string& address) {
    std::optional<LoopbackClient> client = LoopbackClient::Connect(server_->port(), address);
    EXPECT_TRUE(client) << address;
    return client ? std::move(*client) : LoopbackClient();
  };
  auto health_from = [&](LoopbackClient& client) {
    if (!client.Send(GetRequest("/health"))) return RawResponse{};
    std::optional<RawResponse> response = client.ReadResponse(kPatient);
    return response ? *response : RawResponse{};
  };
  std::vector<LoopbackClient> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_from("127.0.0.1"));
    EXPECT_EQ(health_from(held.back()).status, 200) << i;
  }
  LoopbackClient fifth = connect_from("127.0.0.1");
  const RawResponse refused = health_from(fifth);
  ExpectOpenAiError(refused, 503, "a fifth connection from one client");
  EXPECT_NE(refused.body.find("per client"), std::string::npos) << refused.body;
  // Another client still gets in, up to the total.
  for (int i = 0; i < 2; ++i) {
    held.push_back(connect_from("127.0.0.2"));
    EXPECT_EQ(health_from(held.back()).status, 200) << i;
  }
  LoopbackClient seventh = connect_from("127.0.0.3");
  ExpectOpenAiError(health_from(seventh), 503, "a seventh connection");
  held.front().Close();
  // The place comes back once the server has seen the close.
  EXPECT_TRUE(WaitFor(
      [&] {
        LoopbackClient again = connect_from("127.0.0.1");
        return health_from(again).status == 200;
      },
      kPatient));
}

// The rest of HTTP/1.1 that clients use: Expect: 100-continue, HTTP/1.0 (a stream is
// delimited by the close), HEAD, a method an endpoint does not take.
TEST_F(HostileClientTest, ContinueHttp10HeadAndMethods) {
  Start();
  const std::string body = ChatBody("hi", 2).dump();
  LoopbackClient client = Connect();
  ASSERT_TRUE(client.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\nExpect: 100-continue\r\n\r\n"));
  // The 100 comes before the body is sent.
  const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
  EXPECT_EQ(client.ReadBytes(interim.size(), kPatient), interim);
  ASSERT_TRUE(client.Send(body));
  std::optional<RawResponse> answered = client.ReadResponse(kPatient);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200) << answered->body;

  const std::string streamed = ChatBody("hi", 4, /*stream=*/true).dump();
  const RawResponse old = Ask("POST /v1/chat/completions HTTP/1.0\r\nContent-Length: " +
                              std::to_string(streamed.size()) + "\r\n\r\n" + streamed);
  EXPECT_EQ(old.status, 200);
  EXPECT_FALSE(old.chunked);
  EXPECT_TRUE(old.complete);
  EXPECT_FALSE(ChatText(old).empty()) << old.body;

  const RawResponse head = Ask("HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  const RawResponse get_chat = Ask(GetRequest("/v1/chat/completions"));
  ExpectOpenAiError(get_chat, 405, "GET on a POST endpoint");
  EXPECT_EQ(get_chat.headers.count("allow") ? get_chat.headers.at("allow") : "", "POST");
  ExpectOpenAiError(Ask(GetRequest("/nowhere")), 404, "no such path");
}

// Every kind of client at once: streaming and whole replies, slow heads, clients that go
// away early and mid-stream, and a monitor polling /health. Replies equal the sequential
// ones, /health stays prompt, and the metrics add up.
TEST_F(HostileClientTest, LoadOfEveryKindOfClientAtOnce) {
  Start({}, /*sessions=*/2);
  constexpr int kClients = 8;
  constexpr int kRounds = 3;  // requests of each client, one after the other
  constexpr int kGone = 6;
  constexpr int kSlow = 80;
  auto request = [](int i) {
    return PostRequest(
        "/v1/chat/completions",
        ChatBody("Tell me story number " + std::to_string(i), 24, i % 2 == 0).dump());
  };
  std::vector<std::string> sequential(kClients);
  for (int i = 0; i < kClients; ++i) {
    sequential[i] = ChatText(Ask(request(i)));
    ASSERT_FALSE(sequential[i].empty()) << i;
  }

  std::atomic<bool> running{true};
  std::vector<std::thread> threads;
  // Slow heads, one header line every 200 ms.
  std::vector<LoopbackClient> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(Connect());
    slow.back().Send("POST /v1/chat/completions HTTP/1.1\r\n");
  }
  threads.emplace_back([&] {
    for (int line = 0; running.load(); ++line) {
      for (LoopbackClient& c : slow) c.Send("X-Line: " + std::to_string(line) + "\r\n");
      std::this_thread::sleep_for(milliseconds(200));
    }
  });
  // The monitor.
  std::vector<milliseconds> health;
  threads.emplace_back([&] {
    while (running.load()) {
      health.push_back(HealthLatency(kPatient));
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  // Clients that go away: before any answer, or after the first bytes of a stream.
  for (int i = 0; i < kGone; ++i) {
    threads.emplace_back([&, i] {
      LoopbackClient c = Connect();
      c.Send(PostRequest("/v1/chat/completions", ChatBody("Go away " + std::to_string(i), 400,
                                                          /*stream=*/true)
                                                     .dump()));
      if (i % 2 == 1) c.ReadResponse(milliseconds(200));
      c.Close(/*reset=*/i % 3 == 0);
    });
  }
  std::vector<std::vector<std::string>> concurrent(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      for (int round = 0; round < kRounds; ++round) {
        concurrent[i].push_back(ChatText(Ask(request(i))));
      }
    });
  }
  for (std::thread& t : clients) t.join();
  running.store(false);
  for (std::thread& t : threads) t.join();

  for (int i = 0; i < kClients; ++i) {
    for (int round = 0; round < kRounds; ++round) {
      EXPECT_EQ(concurrent[i][round], sequential[i]) << "client " << i << ", round " << round;
    }
  }
  ASSERT_FALSE(health.empty());
  for (milliseconds latency : health) EXPECT_LT(latency, kPrompt);

  // Every chat request is counted once: (1 + kRounds) x kClients answered, the gone ones as 499
  // or (when they ended before the client left) 200; nothing is left running or waiting.
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = MetricsText();
        return Metric(text, "reprise_requests_running") == 0 &&
               Metric(text, "reprise_queue_length") == 0 &&
               Metric(text, R"(reprise_requests_total{endpoint="chat",code="200"})") +
                       Metric(text, R"(reprise_requests_total{endpoint="chat",code="499"})") ==
                   (1 + kRounds) * kClients + kGone;
      },
      kPatient))
      << text;
  const double ok = Metric(text, R"(reprise_requests_total{endpoint="chat",code="200"})");
  EXPECT_GE(ok, (1 + kRounds) * kClients);
  EXPECT_EQ(Metric(text, "reprise_requests_cancelled_total"),
            Metric(text, R"(reprise_requests_total{endpoint="chat",code="499"})"));
  EXPECT_EQ(Metric(text, "reprise_ttft_seconds_count"), ok);
  for (LoopbackClient& c : slow) c.Close();
}

}  // namespace
}  // namespace reprise::server
