#include "engine/token_logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/loaded_model.h"

namespace reprise::engine {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

TEST(LogSumExpTest, IsStableForLargeLogitsAndIgnoresMaskedOnes) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_NEAR(LogSumExp(std::vector<float>{0.0f, 0.0f}), std::log(2.0), 1e-12);
  EXPECT_NEAR(LogSumExp(std::vector<float>{1000.0f, 1000.0f, -inf}), 1000.0 + std::log(2.0), 1e-9);
  EXPECT_EQ(LogSumExp(std::vector<float>{-inf, -inf}), -inf);
}

TEST(LogprobScorerTest, ScoresTheTokenAndTheMostLikelyBestFirstLowerIdOnTies) {
  Result<std::unique_ptr<LoadedModel>> model = LoadedModel::Load(kModel);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  const tokenizer::Tokenizer& tok = (*model)->tokenizer();
  std::vector<float> logits(tok.num_tokens(), 0.0f);
  logits[7] = 3.0f;
  logits[9] = 5.0f;
  logits[4] = 3.0f;
  LogprobScorer scorer(tok, 3);
  const PositionLogprobs scored = scorer.Score(logits, 7);
  const double normalizer = LogSumExp(logits);
  EXPECT_EQ(scored.token.id, 7);
  EXPECT_NEAR(scored.token.logprob, 3.0 - normalizer, 1e-5);
  EXPECT_EQ(scored.token.text, tok.TokenPiece(7));
  ASSERT_EQ(scored.top.size(), 3u);
  EXPECT_EQ(scored.top[0].id, 9);
  EXPECT_EQ(scored.top[1].id, 4);
  EXPECT_EQ(scored.top[2].id, 7);
  EXPECT_NEAR(scored.top[0].logprob, 5.0 - normalizer, 1e-5);
  // No alternatives asked: none given.
  LogprobScorer plain(tok, 0);
  EXPECT_TRUE(plain.Score(logits, 9).top.empty());
}

}  // namespace
}  // namespace reprise::engine
