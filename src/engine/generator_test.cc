// GenerateFrom's stopping rules on a backend whose every next token is the end of generation.
#include "engine/generator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/inference_backend.h"
#include "engine/loaded_model.h"

namespace reprise::engine {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

// Logits that always make `next` the most likely token.
class FixedNextToken : public InferenceBackend {
 public:
  FixedNextToken(const LoadedModel& model, int32_t next)
      : model_(model), logits_(static_cast<size_t>(model.config().vocab_size), 0.0f) {
    logits_[static_cast<size_t>(next)] = 10.0f;
  }
  const model::ModelConfig& config() const override { return model_.config(); }
  int num_tokens() const override { return num_tokens_; }
  int capacity_tokens() const override { return 1024; }
  Result<std::span<const float>> Append(std::span<const int32_t> tokens) override {
    num_tokens_ += static_cast<int>(tokens.size());
    return std::span<const float>(logits_);
  }
  void Truncate(int num_tokens) override { num_tokens_ = num_tokens; }
  const char* name() const override { return "fixed"; }
  std::span<const float> logits() const { return logits_; }

 private:
  const LoadedModel& model_;
  std::vector<float> logits_;
  int num_tokens_ = 0;
};

TEST(GeneratorTest, AnEndOfGenerationTokenStopsUnlessTheCallerKeepsGoing) {
  Result<std::unique_ptr<LoadedModel>> model = LoadedModel::Load(kModel);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  const std::optional<int32_t> eos = (*model)->tokenizer().eos_id();
  ASSERT_TRUE(eos.has_value());
  FixedNextToken backend(**model, *eos);
  GenerationOptions options;
  options.max_new_tokens = 5;
  for (const bool stop : {true, false}) {
    SCOPED_TRACE(stop ? "stop" : "go on");
    options.stop_at_end_of_generation = stop;
    std::vector<int32_t> generated;
    GenerationStats stats;
    ASSERT_TRUE(GenerateFrom(backend, (*model)->tokenizer(), backend.logits(), options, {},
                             &generated, stats)
                    .ok());
    EXPECT_EQ(stats.stop_reason, stop ? "end of generation" : "length");
    EXPECT_EQ(generated, std::vector<int32_t>(stop ? 1 : 5, *eos));
  }
}

}  // namespace
}  // namespace reprise::engine
