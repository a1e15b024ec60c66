#include "tools/request_recall_oracle.h"

#include <gtest/gtest.h>

#include <string>

#include "convert/model_maker.h"
#include "engine/request_segments.h"
#include "support/temp_dir.h"

namespace reprise::tools {
namespace {

using engine::BuildRequestSegments;
using engine::EncodePrompt;
using engine::LoadedModel;

std::string Passage(int seed, int words) {
  static const char* kWords[] = {"river",  "stone", "light", "cloud",  "green",  "table",
                                 "winter", "paper", "music", "garden", "silver", "window"};
  std::string out;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 7;
  for (int i = 0; i < words; ++i) {
    x = x * 1664525u + 1013904223u;
    out += (i ? " " : "") + std::string(kWords[(x >> 8) % 12]);
  }
  return out + ".";
}

GenerateRequest Chat(std::vector<Document> documents, std::string question) {
  GenerateRequest r;
  r.messages = {{"system", "You answer from the documents."}, {"user", std::move(question)}};
  r.documents = std::move(documents);
  return r;
}

class RequestRecallOracleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    convert::MakeModelOptions options;
    options.shape = "tiny";
    options.weight_type = DType::kF32;
    ASSERT_TRUE(convert::MakeModel(options, path_).ok());
  }
  testing_support::TempDir dir_;
  std::string path_ = dir_.path() + "/tiny.gguf";
};

// The prompts are the engine's own: documents in a new order are reusable, whole, from the
// second request on; the first request has nothing to reuse.
TEST_F(RequestRecallOracleTest, CountsDocumentsSeenInEarlierRequestsAsReusable) {
  auto oracle = RequestRecallOracle::Open(path_, 32);
  ASSERT_TRUE(oracle.ok()) << oracle.error().ToString();
  const Document a{"a", Passage(1, 60)}, b{"b", Passage(2, 60)}, c{"c", Passage(3, 60)};
  EXPECT_EQ((*oracle)->CountThenAdd(Chat({a, b}, "Which river?")), 0);
  auto model = std::move(LoadedModel::Load(path_)).value();
  const auto tokens_of = [&](const GenerateRequest& r) {
    return static_cast<int64_t>(
        EncodePrompt(model->tokenizer(), BuildRequestSegments(r, model->chat_format())).size());
  };
  const GenerateRequest again = Chat({b, c, a}, "Which stone?");
  const int64_t reusable = (*oracle)->CountThenAdd(again);
  // a and b (and the system prompt before them) are reusable; c and the question are not.
  GenerateRequest only_c = Chat({c}, "Which stone?");
  EXPECT_GT(reusable, 2 * (tokens_of(Chat({a}, "")) - tokens_of(Chat({}, ""))) - 8);
  EXPECT_LT(reusable, tokens_of(again) - (tokens_of(only_c) - tokens_of(Chat({}, ""))));
  // The identical request is reusable in full.
  EXPECT_EQ((*oracle)->CountThenAdd(again), tokens_of(again));
}

TEST(CountReusableInTest, CountsReusableTokensInsideTheRunsOnly) {
  const std::vector<uint8_t> mask = {1, 1, 0, 0, 1, 1, 1, 0, 1, 1};
  const std::vector<std::pair<int, int>> runs = {{1, 5}, {6, 9}};
  EXPECT_EQ(CountReusableIn<int>(mask, runs), 2 + 2);  // tokens 1, 4; 6, 8
  EXPECT_EQ(CountReusableIn<int>(mask, std::vector<std::pair<int, int>>{}), 0);
  // Runs past the mask (another prompt than the oracle's) count where both have tokens.
  const std::vector<std::pair<int64_t, int64_t>> long_runs = {{8, 40}, {50, 60}};
  EXPECT_EQ(CountReusableIn<int64_t>(mask, long_runs), 2);
}

TEST_F(RequestRecallOracleTest, RefusesAMissingModelAndAZeroWindow) {
  EXPECT_FALSE(RequestRecallOracle::Open(dir_.path() + "/missing.gguf", 32).ok());
  EXPECT_EQ(RequestRecallOracle::Open(path_, 0).error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::tools
