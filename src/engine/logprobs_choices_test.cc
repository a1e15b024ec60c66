// GenerateRequest's log-probabilities (of generated tokens and of the prompt's) and its
// choices sharing one prefill, on the demo kit's trained stories260K: values checked against
// the log-softmax of the logits a forward pass of the same tokens gives (Session::Evaluate),
// on the compiled graphs and on the float reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "reprise/engine.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

std::unique_ptr<Engine> MakeEngine(bool use_reference, ReuseMethod reuse = ReuseMethod::kPrefix) {
  EngineOptions options;
  options.model_path = kModel;
  options.context_tokens = 512;
  options.num_threads = 2;
  options.use_reference = use_reference;
  options.reuse = use_reference ? ReuseMethod::kNone : reuse;
  options.cache_mb = 64;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  if (!engine.ok()) ADD_FAILURE() << engine.error().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// log_softmax(logits)[token], in double.
double LogSoftmaxAt(std::span<const float> logits, int32_t token) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double total = 0.0;
  for (const float x : logits) total += std::exp(static_cast<double>(x) - max);
  return logits[static_cast<size_t>(token)] - max - std::log(total);
}

// The logits after each prefix of `tokens` (entry i: after tokens[0..i]), one Evaluate each.
std::vector<std::vector<float>> ForwardEachPrefix(Engine& engine,
                                                  const std::vector<int32_t>& tokens) {
  std::vector<std::vector<float>> rows;
  Result<std::unique_ptr<Session>> session = engine.OpenSession();
  if (!session.ok()) {
    ADD_FAILURE() << session.error().ToString();
    return rows;
  }
  for (const int32_t t : tokens) {
    Result<const float*> logits = (*session)->Evaluate(&t, 1);
    if (!logits.ok()) {
      ADD_FAILURE() << logits.error().ToString();
      return rows;
    }
    rows.emplace_back(*logits, *logits + engine.vocab_size());
  }
  return rows;
}

GenerateRequest ScoredRequest() {
  GenerateRequest request;
  request.prompt = "Once upon a time, Lily saw a big tree";
  request.max_new_tokens = 8;
  request.return_logprobs = true;
  request.top_logprobs = 5;
  request.return_prompt_logprobs = true;
  return request;
}

void ExpectLogprobsOfAForwardPass(Engine& engine, double tolerance) {
  Result<GenerateResult> result = engine.Generate(ScoredRequest());
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  const std::vector<int32_t>& prompt = result->prompt_tokens;
  const std::vector<int32_t>& generated = result->generated_tokens;
  ASSERT_EQ(result->logprobs.size(), generated.size());
  ASSERT_EQ(result->prompt_logprobs.size(), prompt.size());
  EXPECT_TRUE(std::isnan(result->prompt_logprobs[0].token.logprob));
  EXPECT_EQ(result->prompt_logprobs[0].token.id, prompt[0]);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::vector<std::vector<float>> rows = ForwardEachPrefix(engine, all);
  ASSERT_EQ(rows.size(), all.size());
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    SCOPED_TRACE("token " + std::to_string(i + 1));
    const PositionLogprobs& entry = i + 1 < prompt.size() ? result->prompt_logprobs[i + 1]
                                                          : result->logprobs[i + 1 - prompt.size()];
    EXPECT_EQ(entry.token.id, all[i + 1]);
    EXPECT_NEAR(entry.token.logprob, LogSoftmaxAt(rows[i], all[i + 1]), tolerance);
    ASSERT_EQ(entry.top.size(), 5u);
    // The alternatives are the five most likely, best first, with their own log-softmax.
    std::vector<int32_t> order(rows[i].size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = static_cast<int32_t>(t);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return rows[i][a] > rows[i][b]; });
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_NEAR(entry.top[k].logprob, LogSoftmaxAt(rows[i], order[k]), tolerance);
      if (k > 0) {
        EXPECT_GE(entry.top[k - 1].logprob, entry.top[k].logprob);
      }
    }
  }
  // Greedy decoding takes the most likely token: its entry is the first alternative.
  for (const PositionLogprobs& entry : result->logprobs) {
    EXPECT_EQ(entry.token.id, entry.top[0].id);
    EXPECT_FALSE(entry.token.text.empty() && entry.token.id != 0);
  }
}

TEST(LogprobsTest, AreTheLogSoftmaxOfTheCompiledForwardPass) {
  std::unique_ptr<Engine> engine = MakeEngine(false);
  ASSERT_NE(engine, nullptr);
  ExpectLogprobsOfAForwardPass(*engine, 2e-3);
}

TEST(LogprobsTest, AreTheLogSoftmaxOfTheReferenceForwardPass) {
  std::unique_ptr<Engine> engine = MakeEngine(true);
  ASSERT_NE(engine, nullptr);
  ExpectLogprobsOfAForwardPass(*engine, 1e-4);
}

TEST(LogprobsTest, CompiledAndReferenceAgreeWithinTheInt8Error) {
  std::unique_ptr<Engine> compiled = MakeEngine(false);
  std::unique_ptr<Engine> reference = MakeEngine(true);
  ASSERT_TRUE(compiled && reference);
  GenerateRequest request = ScoredRequest();
  request.max_new_tokens = 1;
  Result<GenerateResult> a = compiled->Generate(request);
  Result<GenerateResult> b = reference->Generate(request);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->prompt_logprobs.size(), b->prompt_logprobs.size());
  for (size_t i = 1; i < a->prompt_logprobs.size(); ++i) {
    EXPECT_NEAR(a->prompt_logprobs[i].token.logprob, b->prompt_logprobs[i].token.logprob, 0.15)
        << i;
  }
}

TEST(LogprobsTest, ExactReuseDoesNotChangeThem) {
  std::unique_ptr<Engine> engine = MakeEngine(false, ReuseMethod::kPrefix);
  ASSERT_NE(engine, nullptr);
  GenerateRequest request = ScoredRequest();
  request.return_prompt_logprobs = false;
  Result<GenerateResult> cold = engine->Generate(request);
  Result<GenerateResult> warm = engine->Generate(request);
  ASSERT_TRUE(cold.ok() && warm.ok());
  EXPECT_GT(warm->reuse.tokens_prefix, 0);
  ASSERT_EQ(cold->logprobs.size(), warm->logprobs.size());
  for (size_t i = 0; i < cold->logprobs.size(); ++i) {
    EXPECT_EQ(cold->logprobs[i].token.id, warm->logprobs[i].token.id);
    EXPECT_FLOAT_EQ(cold->logprobs[i].token.logprob, warm->logprobs[i].token.logprob);
  }
}

TEST(LogprobsTest, TopLogprobsOutOfRangeAreRefused) {
  std::unique_ptr<Engine> engine = MakeEngine(false);
  ASSERT_NE(engine, nullptr);
  for (const int top : {-1, 21}) {
    GenerateRequest request = ScoredRequest();
    request.top_logprobs = top;
    Result<GenerateResult> result = engine->Generate(request);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ChoicesTest, SeveralChoicesShareOnePrefill) {
  std::unique_ptr<Engine> engine = MakeEngine(false, ReuseMethod::kNone);
  ASSERT_NE(engine, nullptr);
  GenerateRequest request;
  request.prompt = "Once upon a time, Lily saw a big tree";
  request.max_new_tokens = 12;
  request.temperature = 1.0f;
  request.seed = 7;
  request.num_choices = 3;
  request.return_logprobs = true;
  std::vector<std::string> streamed(3);
  Result<GenerateResult> result =
      engine->GenerateChoices(request, [&](int choice, std::string_view text) {
        streamed.at(static_cast<size_t>(choice)) += text;
        return true;
      });
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->more_choices.size(), 2u);
  // One prefill: every prompt token computed once, none taken from a cache (there is none).
  EXPECT_EQ(result->reuse.tokens_new, static_cast<int>(result->prompt_tokens.size()));
  EXPECT_EQ(streamed[0], result->text);
  for (size_t c = 0; c < 2; ++c) {
    const GeneratedChoice& choice = result->more_choices[c];
    EXPECT_EQ(streamed[c + 1], choice.text);
    EXPECT_EQ(choice.logprobs.size(), choice.generated_tokens.size());
    EXPECT_FALSE(choice.stop_reason.empty());
    // Choice c + 1 is what a request of its own with seed + c + 1 generates.
    GenerateRequest alone = request;
    alone.num_choices = 1;
    alone.seed = request.seed + c + 1;
    Result<GenerateResult> single = engine->Generate(alone);
    ASSERT_TRUE(single.ok());
    EXPECT_EQ(single->generated_tokens, choice.generated_tokens) << c;
  }
  // At temperature 1 with different seeds, the choices are not all the same.
  EXPECT_FALSE(result->generated_tokens == result->more_choices[0].generated_tokens &&
               result->generated_tokens == result->more_choices[1].generated_tokens);
}

TEST(ChoicesTest, ChoicesOnTheReferenceBackendAndOutOfRangeCounts) {
  std::unique_ptr<Engine> engine = MakeEngine(true);
  ASSERT_NE(engine, nullptr);
  GenerateRequest request;
  request.prompt = "Once upon a time";
  request.max_new_tokens = 4;
  request.num_choices = 2;  // greedy: both the same
  Result<GenerateResult> result = engine->Generate(request);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->more_choices.size(), 1u);
  EXPECT_EQ(result->more_choices[0].generated_tokens, result->generated_tokens);
  for (const int n : {0, kMaxChoices + 1}) {
    request.num_choices = n;
    EXPECT_FALSE(engine->Generate(request).ok()) << n;
  }
}

}  // namespace
}  // namespace reprise
