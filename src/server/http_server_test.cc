// The server end to end over real HTTP on 127.0.0.1, on the demo kit's stories260K (in the
// repository): OpenAI's shapes, streaming, reuse reported per response, errors, API keys
// and namespaces, concurrency, clients that go away, memory over many requests.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "base/memory_usage.h"
#include "server/server_test_support.h"

namespace reprise::server {
namespace {

using nlohmann::json;

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}, int sessions = 2) {
    options.model_name = "stories260K";
    server_ = std::make_unique<test_support::RunningServer>(kModel, sessions, 1024, options);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }

  void TearDown() override {
    if (server_ && server_->ok()) {
      server_->Stop();
      EXPECT_TRUE(server_->served().ok()) << server_->served().ToString();
    }
  }

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(60, 0);
    return client;
  }

  httplib::Result Post(const std::string& path, const std::string& body,
                       const httplib::Headers& headers = {}) {
    httplib::Client client = Client();
    return client.Post(path, headers, body, "application/json");
  }

  static json ChatBody(const std::string& user, int max_tokens = 8) {
    return json{{"model", "stories260K"},
                {"messages", json::array({{{"role", "user"}, {"content", user}}})},
                {"max_tokens", max_tokens},
                {"temperature", 0}};
  }

  static std::vector<json> Events(const std::string& body, bool* done) {
    return test_support::SseEvents(body, done);
  }

  static void ExpectOpenAiError(const httplib::Result& res, int status) {
    ASSERT_TRUE(res) << "no response";
    EXPECT_EQ(res->status, status) << res->body;
    const json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << res->body;
    ASSERT_TRUE(body.contains("error")) << res->body;
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_FALSE(body["error"]["message"].get<std::string>().empty());
    EXPECT_TRUE(body["error"]["type"].is_string());
  }

  std::unique_ptr<test_support::RunningServer> server_;
};

TEST_F(HttpServerTest, HealthModelsAndThePage) {
  Start();
  httplib::Client client = Client();
  httplib::Result health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  httplib::Result models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  const json list = json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "stories260K");
  EXPECT_EQ(list["data"][0]["owned_by"], "reprise");
  httplib::Result page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
}

TEST_F(HttpServerTest, ChatCompletionWithUsageAndReuse) {
  Start();
  httplib::Result res = Post("/v1/chat/completions", ChatBody("Tell me a story.", 12).dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "stories260K");
  EXPECT_EQ(body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_FALSE(body["choices"][0]["message"]["content"].get<std::string>().empty());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
  const int prompt_tokens = body["usage"]["prompt_tokens"];
  EXPECT_GT(prompt_tokens, 3);
  const json& r = body["reprise"];
  EXPECT_EQ(r["tokens_prefix"].get<int>() + r["tokens_reused"].get<int>() +
                r["tokens_recomputed"].get<int>() + r["tokens_new"].get<int>(),
            prompt_tokens);
  EXPECT_EQ(r["namespace"], "default");
  EXPECT_GT(r["ttft_ms"].get<double>(), 0.0);

  // The same conversation one turn later: its first turn is an exact cached prefix.
  json next = ChatBody("Tell me a story.", 4);
  next["messages"].push_back({{"role", "assistant"}, {"content", body["choices"][0]["message"]["content"]}});
  next["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  httplib::Result again = Post("/v1/chat/completions", next.dump());
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  const json second = json::parse(again->body);
  EXPECT_GT(second["reprise"]["tokens_prefix"].get<int>(), 0);
  EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            second["reprise"]["tokens_prefix"].get<int>() +
                second["reprise"]["tokens_reused"].get<int>());
}

TEST_F(HttpServerTest, StreamedTextEqualsTheWholeReply) {
  Start();
  json request = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  httplib::Result whole = Post("/v1/completions", request.dump());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json body = json::parse(whole->body);
  EXPECT_EQ(body["object"], "text_completion");
  const std::string text = body["choices"][0]["text"];

  request["stream"] = true;
  request["stream_options"] = {{"include_usage", true}};
  httplib::Result streamed = Post("/v1/completions", request.dump());
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  EXPECT_NE(streamed->get_header_value("Content-Type").find("text/event-stream"),
            std::string::npos);
  bool done = false;
  const std::vector<json> events = Events(streamed->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(events.size(), 3u);
  std::string joined;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i]["choices"].size(), 1u);
    joined += events[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], "length");
  const json& usage = events.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
  EXPECT_TRUE(usage.contains("reprise"));
}

TEST_F(HttpServerTest, StreamedChatStartsWithTheRoleAndHonoursStop) {
  Start();
  json request = ChatBody("Tell me a story.", 40);
  httplib::Result whole = Post("/v1/chat/completions", request.dump());
  ASSERT_TRUE(whole && whole->status == 200);
  const std::string text = json::parse(whole->body)["choices"][0]["message"]["content"];
  ASSERT_GT(text.size(), 10u);
  // Stop at a word from the middle of the reply: the reply ends right before it.
  const std::string stop = text.substr(text.size() / 2, 3);
  request["stop"] = stop;
  request["stream"] = true;
  httplib::Result streamed = Post("/v1/chat/completions", request.dump());
  ASSERT_TRUE(streamed && streamed->status == 200);
  bool done = false;
  const std::vector<json> events = Events(streamed->body, &done);
  EXPECT_TRUE(done);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string joined;
  for (const json& e : events) {
    if (e["choices"][0]["delta"].contains("content")) joined += e["choices"][0]["delta"]["content"];
  }
  EXPECT_EQ(joined, text.substr(0, text.find(stop)));
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "stop");
}

TEST_F(HttpServerTest, BadRequestsGetOpenAiErrors) {
  ServerOptions options;
  options.max_body_bytes = 64 * 1024;
  Start(options);
  ExpectOpenAiError(Post("/v1/chat/completions", "{not json"), 400);
  ExpectOpenAiError(Post("/v1/chat/completions", "[]"), 400);
  ExpectOpenAiError(Post("/v1/chat/completions", R"({"messages": "x"})"), 400);
  ExpectOpenAiError(Post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", "
                                                  "\"content\": \"\xc3\x28\"}]}"),
                    400);
  json negative = ChatBody("hi");
  negative["max_tokens"] = -5;
  ExpectOpenAiError(Post("/v1/chat/completions", negative.dump()), 400);
  json huge_tokens = ChatBody("hi");
  huge_tokens["max_tokens"] = 1 << 30;
  ExpectOpenAiError(Post("/v1/chat/completions", huge_tokens.dump()), 400);
  json unknown = ChatBody("hi");
  unknown["frobnicate"] = 1;
  ExpectOpenAiError(Post("/v1/chat/completions", unknown.dump()), 400);
  json model = ChatBody("hi");
  model["model"] = "gpt-4";
  httplib::Result wrong_model = Post("/v1/chat/completions", model.dump());
  ExpectOpenAiError(wrong_model, 404);
  EXPECT_EQ(json::parse(wrong_model->body)["error"]["code"], "model_not_found");
  ExpectOpenAiError(Post("/v1/chat/completions", std::string(200 * 1024, ' ')), 413);
  ExpectOpenAiError(Post("/v1/nowhere", "{}"), 404);
  // A prompt longer than the context.
  std::string long_text;
  for (int i = 0; i < 3000; ++i) long_text += "word ";
  ExpectOpenAiError(Post("/v1/chat/completions", ChatBody(long_text).dump()), 400);
  // The server still answers.
  httplib::Result ok = Post("/v1/chat/completions", ChatBody("hi", 2).dump());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  httplib::Client client = Client();
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("reprise_requests_total{endpoint=\"chat\",code=\"400\"}"),
            std::string::npos);
}

TEST_F(HttpServerTest, ApiKeysAreRequiredAndSeparateNamespaces) {
  ServerOptions options;
  options.api_keys = {"key-a:alice", "key-b:bob"};
  Start(options);
  httplib::Result none = Post("/v1/chat/completions", ChatBody("hi").dump());
  ExpectOpenAiError(none, 401);
  EXPECT_EQ(json::parse(none->body)["error"]["code"], "invalid_api_key");
  ExpectOpenAiError(Post("/v1/chat/completions", ChatBody("hi").dump(),
                         {{"Authorization", "Bearer key-c"}}),
                    401);
  httplib::Client client = Client();
  ExpectOpenAiError(client.Get("/v1/models"), 401);

  const json request = ChatBody("Once upon a time there was a little dog named Max.", 4);
  httplib::Result alice = Post("/v1/chat/completions", request.dump(),
                               {{"Authorization", "Bearer key-a"}});
  ASSERT_TRUE(alice && alice->status == 200) << (alice ? alice->body : "");
  EXPECT_EQ(json::parse(alice->body)["reprise"]["namespace"], "alice");
  httplib::Result alice_again = Post("/v1/chat/completions", request.dump(),
                                     {{"Authorization", "Bearer key-a"}});
  ASSERT_TRUE(alice_again && alice_again->status == 200);
  EXPECT_GT(json::parse(alice_again->body)["usage"]["prompt_tokens_details"]["cached_tokens"]
                .get<int>(),
            0);
  // Bob sends the same prompt: nothing of Alice's is reused.
  httplib::Result bob = Post("/v1/chat/completions", request.dump(),
                             {{"Authorization", "Bearer key-b"}});
  ASSERT_TRUE(bob && bob->status == 200);
  const json bob_body = json::parse(bob->body);
  EXPECT_EQ(bob_body["reprise"]["namespace"], "bob");
  EXPECT_EQ(bob_body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(bob_body["reprise"]["tokens_recomputed"], 0);
}

TEST_F(HttpServerTest, ThirtyTwoConcurrentClientsAreAllServed) {
  Start({}, 2);
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 32; ++i) {
    clients.emplace_back([&, i] {
      json request = ChatBody("Story number " + std::to_string(i), 6);
      request["stream"] = (i % 2 == 0);
      httplib::Result res = Post("/v1/chat/completions", request.dump());
      if (res && res->status == 200) {
        ++ok;
      } else {
        ADD_FAILURE() << "client " << i << ": "
                      << (res ? std::to_string(res->status) + " " + res->body
                              : httplib::to_string(res.error()));
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), 32);
}

TEST_F(HttpServerTest, AClientThatGoesAwayMidStreamLeavesTheServerWell) {
  Start({}, 1);
  for (int i = 0; i < 5; ++i) {
    httplib::Client client = Client();
    json request = ChatBody("Once upon a time", 400);
    request["stream"] = true;
    int chunks = 0;
    // Returning false from the receiver closes the connection after the first bytes.
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = request.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 2; };
    httplib::Result res = client.send(req);
    (void)res;
  }
  httplib::Result after = Post("/v1/chat/completions", ChatBody("hi", 3).dump());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

using test_support::kAddressSanitizer;

TEST_F(HttpServerTest, MemoryStaysBoundedOverManyRequests) {
  if (kAddressSanitizer) {
    GTEST_SKIP() << "ASan's quarantine keeps freed memory, so RSS grows by design here; this "
                    "build's LeakSanitizer checks for leaks instead";
  }
  Start({}, 2);
  auto run = [&](int count) {
    for (int i = 0; i < count; ++i) {
      json request = ChatBody("Tell me story " + std::to_string(i % 50), 4);
      request["stream"] = (i % 2 == 0);
      httplib::Result res = Post("/v1/chat/completions", request.dump());
      ASSERT_TRUE(res && res->status == 200);
    }
  };
  run(200);
  const double warm_mb = CurrentRssMb();
  run(800);
  const double after_mb = CurrentRssMb();
  // The chunk cache is capped at 64 MiB and was filled by the first 200; anything else that
  // grew with the request count would be a leak.
  EXPECT_LT(after_mb - warm_mb, 24.0) << warm_mb << " MiB -> " << after_mb << " MiB";
}

TEST_F(HttpServerTest, ChatLogprobsAndSeveralChoicesFromOnePrefill) {
  Start();
  json body = ChatBody("Tell me a story.", 6);
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  body["n"] = 3;
  body["temperature"] = 1.0;
  body["seed"] = 5;
  httplib::Result res = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json answer = json::parse(res->body);
  ASSERT_EQ(answer["choices"].size(), 3u);
  int completion_tokens = 0;
  for (int c = 0; c < 3; ++c) {
    const json& choice = answer["choices"][c];
    EXPECT_EQ(choice["index"], c);
    const json& content = choice["logprobs"]["content"];
    ASSERT_TRUE(content.is_array()) << choice.dump();
    EXPECT_FALSE(content.empty());
    std::string joined;
    for (const json& entry : content) {
      EXPECT_LE(entry["logprob"].get<double>(), 0.0);
      EXPECT_EQ(entry["top_logprobs"].size(), 3u);
      joined += entry["token"].get<std::string>();
    }
    // The tokens spell the reply (an SPM tokenizer's leading space aside).
    EXPECT_NE(joined.find(choice["message"]["content"].get<std::string>()), std::string::npos);
    completion_tokens += static_cast<int>(content.size());
  }
  EXPECT_GE(answer["usage"]["completion_tokens"].get<int>(), completion_tokens);
  // One prefill: the prompt was computed once (blend's cache was empty: every token new).
  EXPECT_EQ(answer["reprise"]["tokens_new"], answer["usage"]["prompt_tokens"]);

  // Streamed: each choice's chunks carry its index; its logprobs come with its last chunk.
  body["stream"] = true;
  httplib::Result streamed = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  bool done = false;
  std::vector<std::string> texts(3);
  int finished = 0;
  for (const json& event : Events(streamed->body, &done)) {
    const json& choice = event["choices"][0];
    const int index = choice["index"];
    if (choice["delta"].contains("content")) texts.at(index) += choice["delta"]["content"];
    if (!choice["finish_reason"].is_null()) {
      ++finished;
      EXPECT_TRUE(choice["logprobs"]["content"].is_array());
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(finished, 3);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(texts[c], answer["choices"][c]["message"]["content"]) << c;
  }
}

TEST_F(HttpServerTest, CompletionEchoScoresThePrompt) {
  Start();
  const json body = {{"prompt", "Once upon a time, there was a cat"},
                     {"max_tokens", 0},
                     {"echo", true},
                     {"logprobs", 1}};
  httplib::Result res = Post("/v1/completions", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json answer = json::parse(res->body);
  const json& choice = answer["choices"][0];
  EXPECT_EQ(choice["text"], "Once upon a time, there was a cat");
  const json& lp = choice["logprobs"];
  const size_t n = lp["tokens"].size();
  // stories260K adds BOS: every prompt token after it has a log-probability.
  EXPECT_EQ(static_cast<int>(n) + 1, answer["usage"]["prompt_tokens"].get<int>());
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["text_offset"].size(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(lp["token_logprobs"][i].is_number()) << i;
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
  }
  // With tokens generated too: the prompt's entries, then the reply's.
  json more = body;
  more["max_tokens"] = 4;
  more["temperature"] = 0;
  httplib::Result generated = Post("/v1/completions", more.dump());
  ASSERT_TRUE(generated);
  ASSERT_EQ(generated->status, 200) << generated->body;
  const json both = json::parse(generated->body);
  // (An end-of-generation token is not in the text, nor among the entries.)
  const size_t reply_tokens = both["usage"]["completion_tokens"];
  EXPECT_LE(both["choices"][0]["logprobs"]["tokens"].size(), n + reply_tokens);
  EXPECT_GE(both["choices"][0]["logprobs"]["tokens"].size(), n + reply_tokens - 1);
  EXPECT_EQ(both["choices"][0]["text"].get<std::string>().rfind(body["prompt"], 0), 0u);
}

TEST_F(HttpServerTest, ResponseFormatJsonSchemaRepliesValidate) {
  Start();
  json body = ChatBody("Describe a pet.", 300);
  body["temperature"] = 1.0;
  body["response_format"] = {
      {"type", "json_schema"},
      {"json_schema",
       {{"name", "pet"},
        {"strict", true},
        {"schema",
         {{"type", "object"},
          {"properties",
           {{"kind", {{"enum", {"cat", "dog"}}}},
            {"legs", {{"type", "integer"}, {"minimum", 0}, {"maximum", 8}}},
            {"name", {{"type", "string"}, {"maxLength", 10}}}}},
          {"required", {"kind", "legs", "name"}},
          {"additionalProperties", false}}}}}};
  for (int seed = 1; seed <= 3; ++seed) {
    body["seed"] = seed;
    httplib::Result res = Post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
    const json reply =
        json::parse(answer["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(reply.is_object()) << res->body;
    EXPECT_TRUE(reply["kind"] == "cat" || reply["kind"] == "dog") << reply.dump();
    EXPECT_TRUE(reply["legs"].is_number_integer()) << reply.dump();
    EXPECT_LE(reply["name"].get<std::string>().size(), 10u * 4);
  }
  // json_object: any object.
  json object = ChatBody("Anything.", 200);
  object["temperature"] = 1.0;
  object["response_format"] = {{"type", "json_object"}};
  httplib::Result any = Post("/v1/chat/completions", object.dump());
  ASSERT_TRUE(any);
  ASSERT_EQ(any->status, 200) << any->body;
  const std::string content = json::parse(any->body)["choices"][0]["message"]["content"];
  if (json::parse(any->body)["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(content, nullptr, false).is_object()) << content;
  }
  // Outside the subset: a 400 naming the keyword.
  body["response_format"]["json_schema"]["schema"]["properties"]["name"]["pattern"] = "^[A-Z]";
  httplib::Result refused = Post("/v1/chat/completions", body.dump());
  ExpectOpenAiError(refused, 400);
  EXPECT_NE(refused->body.find("'pattern' is not supported"), std::string::npos) << refused->body;
}

TEST_F(HttpServerTest, ToolChoiceRequiredReturnsAValidCallAndTheLoopGoesOn) {
  Start();
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "The weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
     "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"],
     "additionalProperties": false}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object",
     "properties": {}, "additionalProperties": false}}}])");
  json body = ChatBody("What is the weather in Paris?", 200);
  body["tools"] = tools;
  body["tool_choice"] = "required";
  body["temperature"] = 1.0;
  std::string call_id;
  json assistant;
  for (int seed = 1; seed <= 3; ++seed) {
    body["seed"] = seed;
    httplib::Result res = Post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    const json& choice = answer["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << res->body;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << res->body;
    const json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    const std::string name = call["function"]["name"];
    const json arguments = json::parse(call["function"]["arguments"].get<std::string>());
    if (name == "get_weather") {
      EXPECT_TRUE(arguments["city"].is_string());
      EXPECT_GE(arguments["days"].get<int>(), 1);
      EXPECT_LE(arguments["days"].get<int>(), 7);
    } else {
      EXPECT_EQ(name, "now");
      EXPECT_EQ(arguments, json::object());
    }
    call_id = call["id"];
    assistant = choice["message"];
  }
  // A named function: always that one.
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "now"}}}};
  httplib::Result named = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(named);
  ASSERT_EQ(named->status, 200) << named->body;
  EXPECT_EQ(json::parse(named->body)["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "now");
  // Streamed: the call as delta.tool_calls fragments (name first, then the arguments in
  // pieces), which reassemble to the call answered whole for the same seed; no markup as
  // content. The grammar lets the model write "arguments" before "name": such a call is sent
  // whole once its name is read, so over several seeds some calls come in pieces.
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  int streamed_in_pieces = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    body["seed"] = seed;
    body["stream"] = false;
    httplib::Result whole = Post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json whole_call = json::parse(whole->body)["choices"][0]["message"]["tool_calls"][0];
    body["stream"] = true;
    httplib::Result streamed = Post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200) << streamed->body;
    bool done = false;
    std::string finish, name, arguments, id, content;
    int fragments = 0;
    for (const json& event : Events(streamed->body, &done)) {
      if (event["choices"].empty()) continue;  // usage
      const json& choice = event["choices"][0];
      if (choice["delta"].contains("content") && choice["delta"]["content"].is_string()) {
        content += choice["delta"]["content"].get<std::string>();
      }
      if (choice["delta"].contains("tool_calls")) {
        const json& fragment = choice["delta"]["tool_calls"][0];
        EXPECT_EQ(fragment["index"], 0);
        if (fragment.contains("id")) {
          EXPECT_TRUE(id.empty()) << "one call, one first fragment";
          id = fragment["id"];
          EXPECT_EQ(fragment["type"], "function");
          name = fragment["function"]["name"];
          EXPECT_EQ(fragment["function"]["arguments"], "");
        } else {
          EXPECT_FALSE(id.empty()) << "arguments before the call's first fragment";
          EXPECT_FALSE(fragment["function"].contains("name"));
        }
        arguments += fragment["function"]["arguments"].get<std::string>();
        ++fragments;
      }
      if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    }
    EXPECT_TRUE(done);
    EXPECT_EQ(finish, "tool_calls");
    EXPECT_EQ(content, "");
    EXPECT_EQ(name, whole_call["function"]["name"]);
    EXPECT_EQ(json::parse(arguments),
              json::parse(whole_call["function"]["arguments"].get<std::string>()))
        << streamed->body;
    streamed_in_pieces += fragments > 2;
  }
  EXPECT_GT(streamed_in_pieces, 0);
  // The call and its result go back; the tools stay one reusable segment.
  json next = ChatBody("What is the weather in Paris?", 8);
  next["tools"] = tools;
  next["messages"].push_back(assistant);
  next["messages"].push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", "18 C"}});
  httplib::Result answer = Post("/v1/chat/completions", next.dump());
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  EXPECT_GT(json::parse(answer->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            0);
}

}  // namespace
}  // namespace reprise::server
