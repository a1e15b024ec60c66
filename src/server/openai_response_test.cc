#include "server/openai_response.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <vector>

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
  const json body =
      json::parse(CompletionBody(header, SomeResult(), {ChoiceOutput{"Hello", "length"}}, 3.0));
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
  const json body = json::parse(CompletionBody(header, SomeResult(), {ChoiceOutput{"x", "stop"}}, 0));
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "x");

  const ResponseHeader chat{Endpoint::kChat, "chatcmpl-2", 1, "m"};
  const json first = json::parse(StreamChunk(chat, 0, "Hi", true, ""));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = json::parse(StreamChunk(chat, 0, "", false, "stop"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  const json usage = json::parse(UsageChunk(chat, SomeResult(), 0));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
}

TEST(OpenAiResponseTest, InvalidUtf8IsReplacedNotRefused) {
  const ResponseHeader header{Endpoint::kChat, "chatcmpl-3", 1, "m"};
  const json chunk = json::parse(StreamChunk(header, 0, "a\xff" "b", false, ""));
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "a\xEF\xBF\xBD" "b");
}

TokenLogprob Token(int32_t id, const std::string& text, float logprob) {
  TokenLogprob t;
  t.id = id;
  t.text = text;
  t.logprob = logprob;
  return t;
}

std::vector<PositionLogprobs> SomeLogprobs() {
  std::vector<PositionLogprobs> out(3);
  out[0].token = Token(5, "He", -0.5f);
  out[0].top = {Token(5, "He", -0.5f), Token(6, "I", -1.5f)};
  out[1].token = Token(7, "llo", -0.25f);
  out[1].top = {Token(7, "llo", -0.25f)};
  out[2].token = Token(2, "</s>", -0.1f);
  return out;
}

TEST(OpenAiResponseTest, ChatLogprobsHaveOpenAisShape) {
  const ResponseHeader header{Endpoint::kChat, "chatcmpl-4", 1, "m"};
  ChoiceOutput choice{"Hello", "stop", true,
                      SentLogprobs(SomeLogprobs(), "end of generation", false, 5)};
  ChoiceOutput second{"Hi", "length"};
  const json body = json::parse(CompletionBody(header, SomeResult(), {choice, second}, 0));
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_TRUE(body["choices"][1]["logprobs"].is_null());
  const json& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);  // the end-of-generation token is not in the reply
  EXPECT_EQ(content[0]["token"], "He");
  EXPECT_EQ(content[0]["logprob"], -0.5);
  EXPECT_EQ(content[0]["bytes"], json::parse("[72, 101]"));
  ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "I");
  EXPECT_EQ(content[0]["top_logprobs"][1]["logprob"], -1.5);
  // Streamed: on the choice's last chunk.
  const json last = json::parse(StreamChunk(header, 0, "", false, "stop", &choice));
  EXPECT_EQ(last["choices"][0]["logprobs"]["content"].size(), 2u);
}

TEST(OpenAiResponseTest, CompletionLogprobsWithAnEchoedPromptStartWithNull) {
  const ResponseHeader header{Endpoint::kCompletion, "cmpl-5", 1, "m"};
  std::vector<PositionLogprobs> entries = SomeLogprobs();
  entries[0].token.logprob = std::numeric_limits<float>::quiet_NaN();
  entries[0].top.clear();
  ChoiceOutput choice{"Hello</s>", "length", true, entries};
  const json body = json::parse(CompletionBody(header, SomeResult(), {choice}, 0));
  const json& lp = body["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json::parse(R"(["He", "llo", "</s>"])"));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -0.25);
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["top_logprobs"][1]["llo"], -0.25);
  EXPECT_EQ(lp["text_offset"], json::parse("[0, 2, 5]"));
}

TEST(OpenAiResponseTest, SentLogprobsStopWhereTheSentTextStops) {
  const std::vector<PositionLogprobs> all = SomeLogprobs();
  EXPECT_EQ(SentLogprobs(all, "length", false, 0).size(), 3u);
  EXPECT_EQ(SentLogprobs(all, "end of generation", false, 5).size(), 2u);
  // A stop sequence cut the text after "He" (or inside "llo"): tokens that begin in it stay.
  EXPECT_EQ(SentLogprobs(all, "stopped", true, 2).size(), 1u);
  EXPECT_EQ(SentLogprobs(all, "stopped", true, 3).size(), 2u);
  EXPECT_EQ(SentLogprobs(all, "stopped", true, 0).size(), 0u);
}

TEST(OpenAiResponseTest, FinishReasons) {
  EXPECT_EQ(FinishReason("length", false), "length");
  EXPECT_EQ(FinishReason("context full", false), "length");
  EXPECT_EQ(FinishReason("end of generation", false), "stop");
  EXPECT_EQ(FinishReason("stopped", true), "stop");
}

}  // namespace
}  // namespace reprise::server
