#include "server/openai_response.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace reprise::server {
namespace {

using nlohmann::json;

GenerateResult SomeResult() {
  GenerateResult r;
  r.prompt_tokens = std::vector<int32_t>(100, 1);
  r.generated_tokens = std::vector<int32_t>(5, 2);
  r.ttft_ms = 12.5;
  r.decode_tokens_per_second = 40;
  r.stop_reason = "length";
  r.name_space = "app";
  r.reuse.tokens_prefix = 10;
  r.reuse.tokens_reused = 60;
  r.reuse.tokens_recomputed = 20;
  r.reuse.tokens_stable = 40;
  r.reuse.tokens_new = 10;
  r.reuse.chunks_from_memory = 2;
  r.reuse.chunks_from_flash = 1;
  r.reuse.found_runs = {{0, 10}, {20, 100}};
  return r;
}

TEST(OpenAiResponseTest, ChatCompletionHasOpenAisShapeAndReuse) {
  const ResponseHeader header{Endpoint::kChat, "chatcmpl-1", 1700000000, "m"};
  const json body = json::parse(CompletionBody(header, SomeResult(), "Hello", "length", 3.0));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"], "chatcmpl-1");
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 100);
  EXPECT_EQ(body["usage"]["completion_tokens"], 5);
  EXPECT_EQ(body["usage"]["total_tokens"], 105);
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 70);
  EXPECT_EQ(body["reprise"]["tokens_recomputed"], 20);
  EXPECT_EQ(body["reprise"]["tokens_stable"], 40);
  EXPECT_EQ(body["reprise"]["chunks_from_flash"], 1);
  EXPECT_EQ(body["reprise"]["namespace"], "app");
  EXPECT_EQ(body["reprise"]["queue_ms"], 3.0);
  EXPECT_EQ(body["reprise"]["found_runs"], json::parse("[[0,10],[20,100]]"));
}

TEST(OpenAiResponseTest, CompletionAndChunks) {
  const ResponseHeader header{Endpoint::kCompletion, "cmpl-1", 1, "m"};
  const json body = json::parse(CompletionBody(header, SomeResult(), "x", "stop", 0));
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "x");

  const ResponseHeader chat{Endpoint::kChat, "chatcmpl-2", 1, "m"};
  const json first = json::parse(StreamChunk(chat, "Hi", true, ""));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = json::parse(StreamChunk(chat, "", false, "stop"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  const json usage = json::parse(UsageChunk(chat, SomeResult(), 0));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
}

TEST(OpenAiResponseTest, InvalidUtf8IsReplacedNotRefused) {
  const ResponseHeader header{Endpoint::kChat, "chatcmpl-3", 1, "m"};
  const json chunk = json::parse(StreamChunk(header, "a\xff" "b", false, ""));
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "a\xEF\xBF\xBD" "b");
}

TEST(OpenAiResponseTest, FinishReasons) {
  EXPECT_EQ(FinishReason("length", false), "length");
  EXPECT_EQ(FinishReason("context full", false), "length");
  EXPECT_EQ(FinishReason("end of generation", false), "stop");
  EXPECT_EQ(FinishReason("stopped", true), "stop");
}

}  // namespace
}  // namespace reprise::server
