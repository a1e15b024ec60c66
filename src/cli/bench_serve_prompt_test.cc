// bench serve compares servers on the same prompts: a request whose documents and skills go in
// Reprise's fields and the same request with them inline (as other servers get it) must make
// the same prompt tokens, built as the engine builds them (PromptTokenizer: request segments,
// then each encoded) from what the server's own parser reads. On a plain-format model (always)
// and in ChatML with the Qwen vocabulary (../shared/data), for a hand-made request and the
// real docqa, agent and agent-tools traces (tools, assistant tool calls and tool results).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench_serve.h"
#include "convert/model_maker.h"
#include "engine/request_segments.h"
#include "reprise/engine.h"
#include "server/openai_request.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tiktoken_import.h"
#include "tokenizer/tokenizer.h"
#include "workload/serve_trace.h"

namespace reprise::cli {
namespace {

using nlohmann::json;

// A request's prompt tokens: PromptTokenizer on a model file, or the steps it takes
// (BuildRequestSegments, EncodePrompt) with a tokenizer and chat format of one's own.
using PromptFn = std::function<std::vector<int32_t>(const GenerateRequest&)>;

// The prompt tokens of a chat completion body, as `reprise serve` would run it.
std::vector<int32_t> PromptOf(const PromptFn& prompt_of, const json& body) {
  server::RequestLimits limits;
  limits.max_documents = 1 << 20;
  Result<server::ServeRequest> request = server::ParseChatCompletionRequest(body.dump(), limits);
  EXPECT_TRUE(request.ok()) << request.error().ToString();
  return request.ok() ? prompt_of(request->generate) : std::vector<int32_t>{};
}

// Field and inline forms of `request` give the same tokens; returns how many.
size_t ExpectSamePrompt(const PromptFn& tokenizer, const workload::TraceRequest& request,
                        const std::vector<workload::TraceMessage>& messages) {
  const json field = BuildChatBody(request, messages, {.documents = DocumentsMode::kField});
  const json inline_body = BuildChatBody(request, messages, {.documents = DocumentsMode::kInline});
  const std::vector<int32_t> tokens = PromptOf(tokenizer, field);
  EXPECT_EQ(tokens, PromptOf(tokenizer, inline_body)) << request.id;
  return tokens.size();
}

workload::TraceRequest HandMade() {
  workload::TraceRequest request;
  request.id = "hand-made";
  request.system = "Answer from the documents.";
  request.documents = {{"d1", "Paris is in France.\nIt is large."}, {"d2", "Rome is in Italy."}};
  request.skills = {{"maps", "Use a map."}};
  request.user = "Where is Paris?";
  return request;
}

class BenchServePromptTest : public ::testing::Test {
 protected:
  // Every request of the first `num_requests` of `trace` (its chat window as bench serve
  // keeps it) in both forms.
  void ExpectSamePromptsInTrace(const PromptFn& tokenizer, workload::ServeTraceKind kind,
                                int num_requests) {
    auto data = testing_support::SharedDataDir();
    if (!data) return;
    workload::ServeTraceOptions options;
    options.data_dir = *data;
    options.num_requests = num_requests;
    options.max_prompt_tokens = 3000;
    options.max_catalog_skills = 10;
    options.count_tokens = workload::EstimateTokens;
    Result<workload::ServeTrace> trace = workload::BuildServeTrace(kind, options);
    ASSERT_TRUE(trace.ok()) << trace.error().ToString();
    workload::ChatWindow window(options.max_prompt_tokens, workload::EstimateTokens);
    int with_context = 0;
    for (const workload::TraceRequest& request : trace->requests) {
      with_context +=
          !request.documents.empty() || !request.skills.empty() || !request.tools.empty();
      EXPECT_GT(ExpectSamePrompt(tokenizer, request, window.Messages(request)), 0u);
    }
    EXPECT_GT(with_context, 0);
  }

  testing_support::TempDir dir_;
};

TEST_F(BenchServePromptTest, DocumentsInlineMakeTheFieldsPromptOnAPlainFormatModel) {
  const std::string path = dir_.path() + "/tiny.gguf";
  ASSERT_TRUE(convert::MakeModel({.shape = "tiny", .weight_type = DType::kF32}, path).ok());
  Result<std::unique_ptr<PromptTokenizer>> opened = PromptTokenizer::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  const PromptFn tokenizer = [&opened](const GenerateRequest& r) {
    return (*opened)->PromptTokens(r);
  };
  const workload::TraceRequest request = HandMade();
  const std::vector<workload::TraceMessage> messages = {{"system", request.system},
                                                        {"user", request.user}};
  EXPECT_GT(ExpectSamePrompt(tokenizer, request, messages), 20u);
  // Appending the documents to the system message (bench serve's inline form before) makes
  // another prompt: the comparison above can fail.
  json appended = BuildChatBody(request, messages, {.documents = DocumentsMode::kField});
  appended.erase("documents");
  appended.erase("skills");
  appended["messages"][0]["content"] =
      request.system +
      "\n\nSkill maps:\nUse a map.\n\nDocument d1:\nParis is in France.\nIt "
      "is large.\n\nDocument:\nRome is in Italy.";
  EXPECT_NE(
      PromptOf(tokenizer, appended),
      PromptOf(tokenizer, BuildChatBody(request, messages, {.documents = DocumentsMode::kField})));
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kDocQa, 4);
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kAgent, 4);
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kAgentTools, 6);
}

TEST_F(BenchServePromptTest, DocumentsInlineMakeTheFieldsPromptInChatMl) {
  REPRISE_REQUIRE_SHARED_FILE(ranks, "models/tokenizers/qwen/qwen.tiktoken");
  Result<tokenizer::Vocab> vocab =
      tokenizer::VocabFromTiktoken(ranks, tokenizer::TiktokenFamily::kQwen);
  ASSERT_TRUE(vocab.ok()) << vocab.error().ToString();
  ASSERT_EQ(tokenizer::DetectChatFormat(*vocab), tokenizer::ChatFormat::kChatMl);
  Result<std::unique_ptr<tokenizer::Tokenizer>> qwen =
      tokenizer::Tokenizer::Create(std::move(vocab).value());
  ASSERT_TRUE(qwen.ok()) << qwen.error().ToString();
  const PromptFn tokenizer = [&qwen](const GenerateRequest& r) {
    return engine::EncodePrompt(**qwen,
                                engine::BuildRequestSegments(r, tokenizer::ChatFormat::kChatMl));
  };
  const workload::TraceRequest request = HandMade();
  EXPECT_GT(
      ExpectSamePrompt(tokenizer, request, {{"system", request.system}, {"user", request.user}}),
      20u);
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kDocQa, 4);
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kAgent, 4);
  ExpectSamePromptsInTrace(tokenizer, workload::ServeTraceKind::kAgentTools, 6);
}

}  // namespace
}  // namespace reprise::cli
