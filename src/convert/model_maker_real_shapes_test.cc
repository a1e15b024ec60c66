#include <gtest/gtest.h>

#include "convert/model_maker.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"
#include "tokenizer/tokenizer.h"

// Files with the full-size shapes (hundreds of MB of weights to generate): the `slow` label.
namespace reprise::convert {
namespace {

TEST(ModelMakerTest, RealShapesHaveTheRightMetadata) {
  testing_support::TempDir dir;
  struct Expect {
    const char* shape;
    const char* arch;
    uint32_t dim, heads, kv, ffn;
    uint64_t vocab;
  } cases[] = {{"smollm2-135m", "llama", 576, 9, 3, 1536, 49152},
               {"qwen3-0.6b", "qwen3", 1024, 16, 8, 3072, 151936},
               {"llama3.2-1b", "llama", 2048, 32, 8, 8192, 128256}};
  for (const Expect& e : cases) {
    MakeModelOptions options;
    options.shape = e.shape;
    options.weight_type = DType::kQ4_0;
    options.num_layers = 1;  // keeps the file small; the per-layer shapes are the real ones
    const std::string path = dir.path() + "/m.gguf";
    Result<MakeModelSummary> made = MakeModel(options, path);
    ASSERT_TRUE(made.ok()) << made.error().ToString();
    gguf::GgufFile file = std::move(gguf::GgufFile::Open(path)).value();
    Result<model::ModelConfig> config = model::ModelConfig::FromGguf(file);
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    EXPECT_EQ(*file.GetString("general.architecture"), e.arch);
    EXPECT_EQ(config->embedding_dim, static_cast<int>(e.dim));
    EXPECT_EQ(config->num_heads, static_cast<int>(e.heads));
    EXPECT_EQ(config->num_kv_heads, static_cast<int>(e.kv));
    EXPECT_EQ(config->ffn_dim, static_cast<int>(e.ffn));
    EXPECT_EQ(config->vocab_size, static_cast<int>(e.vocab));
    EXPECT_TRUE(config->tied_embeddings);
    if (std::string(e.shape) == "llama3.2-1b") {
      ASSERT_EQ(config->rope_freq_factors.size(), 32u);
      EXPECT_FLOAT_EQ(config->rope_freq_factors.front(), 1.0f);
      EXPECT_FLOAT_EQ(config->rope_freq_factors.back(), 32.0f);
    }
    auto vocab = tokenizer::ReadVocabFromGguf(file);
    ASSERT_TRUE(vocab.ok()) << vocab.error().ToString();
    EXPECT_EQ(vocab->tokens.size(), e.vocab);
    EXPECT_TRUE(tokenizer::Tokenizer::Create(std::move(vocab).value()).ok());
  }
}

TEST(ModelMakerTest, RealVocabularyFromTiktoken) {
  REPRISE_REQUIRE_SHARED_FILE(ranks, "models/tokenizers/qwen/qwen.tiktoken");
  testing_support::TempDir dir;
  MakeModelOptions options;
  options.shape = "qwen3-0.6b";
  options.weight_type = DType::kQ8_0;
  options.num_layers = 1;
  options.vocab_path = ranks;
  const std::string path = dir.path() + "/q.gguf";
  Result<MakeModelSummary> made = MakeModel(options, path);
  ASSERT_TRUE(made.ok()) << made.error().ToString();
  gguf::GgufFile file = std::move(gguf::GgufFile::Open(path)).value();
  auto vocab = std::move(tokenizer::ReadVocabFromGguf(file)).value();
  EXPECT_EQ(vocab.kind, tokenizer::VocabKind::kBpe);
  EXPECT_EQ(vocab.pre, "qwen2");
  EXPECT_EQ(vocab.tokens.size(), 151936u);
  auto tok = std::move(tokenizer::Tokenizer::Create(vocab)).value();
  // "Hello world" in the Qwen vocabulary.
  EXPECT_EQ(tok->Encode("Hello world", {.add_special = false}), (std::vector<int32_t>{9707, 1879}));
}

}  // namespace
}  // namespace reprise::convert
