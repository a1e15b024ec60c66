// The reference model on the real stories260K weights, against greedy_reference.json (made by
// an independent float64 forward pass; see shared/data/SOURCES.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/reference_model.h"
#include "model/reference_ops.h"
#include "support/shared_data.h"

namespace reprise::model {
namespace {

constexpr int32_t kBos = 1;
// The reference logits are float64 results rounded to 1e-6; ours are float32 with double
// accumulation.
constexpr double kLogitTolerance = 1e-4;

struct GreedyReference {
  std::vector<int32_t> generated_ids;
  std::vector<std::vector<float>> logits;  // logits[p] after the token at position p
};

GreedyReference ReadReference(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in);
  GreedyReference ref;
  ref.generated_ids = json.at("generated_ids").get<std::vector<int32_t>>();
  ref.logits = json.at("logits").get<std::vector<std::vector<float>>>();
  return ref;
}

double MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double max_diff = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return max_diff;
}

class Stories260KTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REPRISE_REQUIRE_SHARED_FILE(model_path, "models/stories260K/stories260K.gguf");
    REPRISE_REQUIRE_SHARED_FILE(ref_path, "models/stories260K/greedy_reference.json");
    Result<gguf::GgufFile> file = gguf::GgufFile::Open(model_path);
    ASSERT_TRUE(file.ok()) << file.error().ToString();
    Result<ReferenceModel> model = ReferenceModel::Load(*file);
    ASSERT_TRUE(model.ok()) << model.error().ToString();
    model_.emplace(std::move(model).value());
    reference_ = ReadReference(ref_path);
    ASSERT_EQ(reference_.generated_ids.size(), 256u);
    ASSERT_EQ(reference_.logits.size(), 8u);
  }

  std::optional<ReferenceModel> model_;
  GreedyReference reference_;
};

TEST_F(Stories260KTest, ConfigMatchesTheFile) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.embedding_dim, 64);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.rope_style, RopeStyle::kInterleaved);
}

TEST_F(Stories260KTest, GreedyDecodeReproducesReference) {
  // llama2.c run.c -t 0 -n 256: BOS at position 0, feed back the argmax, stop at BOS or after
  // 256 positions.
  ReferenceCache cache = model_->NewCache(256);
  std::vector<int32_t> generated;
  int32_t token = kBos;
  for (int position = 0; position < 256; ++position) {
    Result<std::vector<float>> logits = model_->Forward(cache, std::span(&token, 1));
    ASSERT_TRUE(logits.ok()) << logits.error().ToString();
    if (position < 8) {
      EXPECT_LE(MaxAbsDiff(*logits, reference_.logits[static_cast<size_t>(position)]),
                kLogitTolerance)
          << "position " << position;
    }
    token = Argmax(*logits);
    if (token == kBos) break;
    generated.push_back(token);
  }
  EXPECT_EQ(generated, reference_.generated_ids);
  EXPECT_EQ(cache.num_tokens, 256);
}

TEST_F(Stories260KTest, BatchForwardMatchesReferenceLogits) {
  std::vector<int32_t> tokens = {kBos};
  tokens.insert(tokens.end(), reference_.generated_ids.begin(),
                reference_.generated_ids.begin() + 7);
  ReferenceCache cache = model_->NewCache(8);
  Result<std::vector<float>> logits = model_->Forward(cache, tokens);
  ASSERT_TRUE(logits.ok()) << logits.error().ToString();
  const std::span<const float> all(*logits);
  for (size_t p = 0; p < 8; ++p) {
    EXPECT_LE(MaxAbsDiff(all.subspan(p * 512, 512), reference_.logits[p]), kLogitTolerance)
        << "position " << p;
    EXPECT_EQ(Argmax(all.subspan(p * 512, 512)), reference_.generated_ids[p]);
  }
}

}  // namespace
}  // namespace reprise::model
