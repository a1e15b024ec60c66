#include "convert/model_maker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf_file.h"
#include "model/reference_model.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace reprise::convert {
namespace {

std::vector<float> LastLogits(const std::string& path) {
  gguf::GgufFile file = std::move(gguf::GgufFile::Open(path)).value();
  model::ReferenceModel m = std::move(model::ReferenceModel::Load(file)).value();
  model::ReferenceCache cache = m.NewCache(8);
  const int32_t tokens[] = {1, 300, 301, 302};
  std::vector<float> all = std::move(m.Forward(cache, tokens)).value();
  return std::vector<float>(all.end() - m.config().vocab_size, all.end());
}

double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Every writable type loads and computes close to the F32 model with the same seed.
TEST(ModelMakerTest, EveryWeightTypeLoadsAndAgreesWithF32) {
  testing_support::TempDir dir;
  for (const char* shape : {"tiny", "tiny-qwen2", "tiny-qwen3", "tiny-256"}) {
    MakeModelOptions options;
    options.shape = shape;
    options.weight_type = DType::kF32;
    const std::string f32 = dir.path() + "/" + shape + "-f32.gguf";
    ASSERT_TRUE(MakeModel(options, f32).ok());
    const std::vector<float> reference = LastLogits(f32);
    const struct {
      DType type;
      double tolerance;
    } cases[] = {{DType::kF16, 0.005}, {DType::kBF16, 0.03}, {DType::kQ8_0, 0.02},
                 {DType::kQ4_0, 0.25}, {DType::kQ4_1, 0.25}, {DType::kQ5_0, 0.12},
                 {DType::kQ5_1, 0.12}, {DType::kQ4_K, 0.25}, {DType::kQ5_K, 0.12},
                 {DType::kQ6_K, 0.06}, {DType::kQ3_K, 0.5}};
    for (const auto& c : cases) {
      options.weight_type = c.type;
      const std::string path =
          dir.path() + "/" + shape + "-" + std::string(DTypeName(c.type)) + ".gguf";
      Result<MakeModelSummary> made = MakeModel(options, path);
      ASSERT_TRUE(made.ok()) << made.error().ToString();
      gguf::GgufFile file = std::move(gguf::GgufFile::Open(path)).value();
      const bool fits =
          GetDTypeInfo(c.type).block_elements <= 64 || std::string(shape) == "tiny-256";
      EXPECT_EQ(file.FindTensor("blk.0.ffn_up.weight")->dtype, fits ? c.type : DType::kF16);
      const double error = RelativeError(LastLogits(path), reference);
      EXPECT_LT(error, c.tolerance) << shape << " " << DTypeName(c.type);
      EXPECT_GT(error, 0.0) << shape << " " << DTypeName(c.type);
    }
  }
}

TEST(ModelMakerTest, UsesMoreBitsPicksTheEndsAndEveryThirdLayer) {
  std::vector<int> picked;
  for (int l = 0; l < 16; ++l) {
    if (UsesMoreBits(l, 16)) picked.push_back(l);
  }
  // An eighth of 16 is 2: layers 0-1 and 14-15, and 2 + 3k + 2 between them.
  EXPECT_EQ(picked, (std::vector<int>{0, 1, 4, 7, 10, 13, 14, 15}));
}

// The Q4_K_M and Q5_K_M mixes: Q6_K for the output matrix and for attn_v / ffn_down of the
// layers UsesMoreBits picks, Q4_K / Q5_K elsewhere; the file says which; the model loads and
// computes.
TEST(ModelMakerTest, KMMixesPutQ6KWhereLlamaCppDoes) {
  testing_support::TempDir dir;
  MakeModelOptions options;
  options.shape = "tiny-256";
  options.num_layers = 8;
  options.weight_type = DType::kQ4_K;
  options.k_m_mix = true;
  const std::string path = dir.path() + "/q4km.gguf";
  ASSERT_TRUE(MakeModel(options, path).ok());
  gguf::GgufFile file = std::move(gguf::GgufFile::Open(path)).value();
  EXPECT_EQ(file.GetU32("general.file_type").value(), 15u);
  EXPECT_EQ(file.FindTensor("output.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ(file.FindTensor("token_embd.weight")->dtype, DType::kQ4_K);
  for (int l = 0; l < 8; ++l) {
    SCOPED_TRACE(l);
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType more = (l == 0 || l == 3 || l == 6 || l == 7) ? DType::kQ6_K : DType::kQ4_K;
    EXPECT_EQ(file.FindTensor(b + "attn_v.weight")->dtype, more);
    EXPECT_EQ(file.FindTensor(b + "ffn_down.weight")->dtype, more);
    EXPECT_EQ(file.FindTensor(b + "attn_q.weight")->dtype, DType::kQ4_K);
    EXPECT_EQ(file.FindTensor(b + "ffn_up.weight")->dtype, DType::kQ4_K);
  }
  EXPECT_EQ(LastLogits(path).size(), 512u);

  // Q5_K_M: the same places in Q6_K, the rest in Q5_K.
  options.weight_type = DType::kQ5_K;
  const std::string q5_path = dir.path() + "/q5km.gguf";
  ASSERT_TRUE(MakeModel(options, q5_path).ok());
  gguf::GgufFile q5 = std::move(gguf::GgufFile::Open(q5_path)).value();
  EXPECT_EQ(q5.GetU32("general.file_type").value(), 17u);
  EXPECT_EQ(q5.FindTensor("output.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ(q5.FindTensor("blk.0.attn_v.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ(q5.FindTensor("blk.1.attn_v.weight")->dtype, DType::kQ5_K);
  EXPECT_EQ(q5.FindTensor("blk.1.ffn_gate.weight")->dtype, DType::kQ5_K);
  EXPECT_EQ(LastLogits(q5_path).size(), 512u);

  options.weight_type = DType::kQ8_0;  // the mix is a Q4_K / Q5_K recipe
  EXPECT_FALSE(MakeModel(options, dir.path() + "/bad.gguf").ok());
}

TEST(ModelMakerTest, SyntheticVocabularyEncodesAnyText) {
  auto tok = std::move(tokenizer::Tokenizer::Create(SyntheticVocab(512))).value();
  const std::string text = "Hello, world! \xf0\x9f\x98\x80 caf\xc3\xa9 123";
  std::vector<int32_t> ids = tok->Encode(text, {.add_special = false});
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(tok->Decode(ids), text);
}

TEST(ModelMakerTest, RejectsUnknownShape) {
  testing_support::TempDir dir;
  MakeModelOptions options;
  options.shape = "gpt5";
  Result<MakeModelSummary> made = MakeModel(options, dir.path() + "/x.gguf");
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message().find("known:"), std::string::npos);
}

// A layer count outside [1, kMaxMadeLayers] is an error, before any file is written.
TEST(ModelMakerTest, RejectsLayerCountsOutOfRange) {
  testing_support::TempDir dir;
  for (int layers : {-1, 0, kMaxMadeLayers + 1, 1 << 30}) {
    MakeModelOptions options;
    options.num_layers = layers;
    Result<MakeModelSummary> made = MakeModel(options, dir.path() + "/x.gguf");
    ASSERT_FALSE(made.ok()) << layers;
    EXPECT_EQ(made.error().code(), StatusCode::kInvalidArgument) << layers;
  }
}

}  // namespace
}  // namespace reprise::convert
