#include "model/reference_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/naive_transformer.h"
#include "model/reference_ops.h"
#include "model/test_model_builder.h"

namespace reprise::model {
namespace {

using Vec = NaiveTransformer::Vec;

ReferenceModel LoadOrDie(const std::vector<uint8_t>& bytes) {
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
  EXPECT_TRUE(file.ok()) << file.error().ToString();
  Result<ReferenceModel> model = ReferenceModel::Load(*file);
  EXPECT_TRUE(model.ok()) << model.error().ToString();
  return std::move(model).value();
}

std::vector<int32_t> Iota(int32_t first, size_t count) {
  std::vector<int32_t> v(count);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Max |a - b| over all logits; `a` is [n, vocab] row-major.
double MaxDiff(const std::vector<float>& a, const std::vector<Vec>& b) {
  double max_diff = 0.0;
  size_t i = 0;
  for (const Vec& row : b) {
    for (double e : row) max_diff = std::max(max_diff, std::fabs(a.at(i++) - e));
  }
  EXPECT_EQ(i, a.size());
  return max_diff;
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double max_diff = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return max_diff;
}

const std::vector<int32_t> kTokens = {3, 17, 5, 9, 17, 0};

struct NamedSpec {
  std::string name;
  TestModelSpec spec;
};

std::vector<NamedSpec> ArchitectureSpecs() {
  std::vector<NamedSpec> specs;
  TestModelSpec s;
  s.num_heads = 4;
  s.num_kv_heads = 4;
  specs.push_back({"LlamaMha", s});
  s.num_kv_heads = 2;
  s.has_rope_freqs = true;
  s.tied_embeddings = true;
  specs.push_back({"LlamaGqa2RopeFreqsTied", s});
  s = TestModelSpec();
  s.num_heads = 4;
  s.num_kv_heads = 1;
  s.rope_dims = 2;  // head_dim 4: partial rotation
  s.seed = 3;
  specs.push_back({"LlamaGqa4PartialRope", s});
  s = TestModelSpec();
  s.arch = Architecture::kQwen2;
  s.num_kv_heads = 2;
  s.rope_theta = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.seed = 4;
  specs.push_back({"Qwen2Bias", s});
  s = TestModelSpec();
  s.arch = Architecture::kQwen3;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 8;  // q_dim 32 != embedding_dim 16
  s.seed = 5;
  specs.push_back({"Qwen3QkNormWideHeads", s});
  s.num_kv_heads = 1;
  s.tied_embeddings = true;
  s.seed = 6;
  specs.push_back({"Qwen3Gqa4Tied", s});
  return specs;
}

void PrintTo(const NamedSpec& spec, std::ostream* os) { *os << spec.name; }

class ArchitectureTest : public ::testing::TestWithParam<NamedSpec> {};

TEST_P(ArchitectureTest, MatchesNaiveForwardPass) {
  const TestModel test_model = MakeTestModel(GetParam().spec);
  ReferenceModel model = LoadOrDie(TestModelBytes(test_model));
  ReferenceCache cache = model.NewCache(16);
  Result<std::vector<float>> logits = model.Forward(cache, kTokens);
  ASSERT_TRUE(logits.ok()) << logits.error().ToString();
  EXPECT_EQ(cache.num_tokens, static_cast<int>(kTokens.size()));
  const std::vector<Vec> expected =
      NaiveTransformer(test_model).Logits(kTokens, Iota(0, kTokens.size()));
  // Float storage of activations against double throughout; logits are of order 1.
  EXPECT_LE(MaxDiff(*logits, expected), 1e-4);
}

TEST_P(ArchitectureTest, ForwardAtMatchesNaiveForArbitraryPositions) {
  const TestModel test_model = MakeTestModel(GetParam().spec);
  ReferenceModel model = LoadOrDie(TestModelBytes(test_model));
  const std::vector<int32_t> positions = {5, 2, 9, 9, 40, 1};
  ReferenceCache cache = model.NewCache(6);
  Result<std::vector<float>> logits = model.ForwardAt(cache, kTokens, positions);
  ASSERT_TRUE(logits.ok()) << logits.error().ToString();
  EXPECT_LE(MaxDiff(*logits, NaiveTransformer(test_model).Logits(kTokens, positions)), 1e-4);
}

TEST_P(ArchitectureTest, IncrementalEqualsBatch) {
  ReferenceModel model = LoadOrDie(TestModelBytes(MakeTestModel(GetParam().spec)));
  ReferenceCache batch_cache = model.NewCache(8);
  const std::vector<float> batch = *model.Forward(batch_cache, kTokens);
  ReferenceCache cache = model.NewCache(8);
  std::vector<float> incremental;
  // One token, then two, then the rest.
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, 1}, {1, 3}, {3, kTokens.size()}}) {
    const std::vector<int32_t> part(kTokens.begin() + static_cast<ptrdiff_t>(begin),
                                    kTokens.begin() + static_cast<ptrdiff_t>(end));
    const std::vector<float> logits = *model.Forward(cache, part);
    incremental.insert(incremental.end(), logits.begin(), logits.end());
  }
  EXPECT_LE(MaxDiff(incremental, batch), 1e-5);
  EXPECT_EQ(cache.k, batch_cache.k);
  EXPECT_EQ(cache.v, batch_cache.v);
}

TEST_P(ArchitectureTest, ForwardAtSlotPositionsEqualsForward) {
  ReferenceModel model = LoadOrDie(TestModelBytes(MakeTestModel(GetParam().spec)));
  ReferenceCache a = model.NewCache(8);
  ReferenceCache b = model.NewCache(8);
  const std::vector<float> first = *model.Forward(a, std::span(kTokens).first(2));
  const std::vector<float> second = *model.Forward(a, std::span(kTokens).subspan(2));
  ASSERT_TRUE(model.ForwardAt(b, std::span(kTokens).first(2), Iota(0, 2)).ok());
  const std::vector<float> second_at =
      *model.ForwardAt(b, std::span(kTokens).subspan(2), Iota(2, kTokens.size() - 2));
  EXPECT_LE(MaxDiff(second, second_at), 1e-6);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.num_tokens, b.num_tokens);
}

TEST_P(ArchitectureTest, ShiftingAllPositionsKeepsLogits) {
  // Attention sees only position differences, so a constant shift changes nothing.
  ReferenceModel model = LoadOrDie(TestModelBytes(MakeTestModel(GetParam().spec)));
  ReferenceCache a = model.NewCache(8);
  ReferenceCache b = model.NewCache(8);
  const std::vector<float> plain = *model.Forward(a, kTokens);
  const std::vector<float> shifted = *model.ForwardAt(b, kTokens, Iota(1000, kTokens.size()));
  EXPECT_LE(MaxDiff(plain, shifted), 1e-4);
  EXPECT_NE(a.k, b.k);  // but the cached keys are rotated differently
}

INSTANTIATE_TEST_SUITE_P(ReferenceModel, ArchitectureTest, ::testing::ValuesIn(ArchitectureSpecs()),
                         [](const ::testing::TestParamInfo<NamedSpec>& spec_info) {
                           return spec_info.param.name;
                         });

TEST(ReferenceModelTest, CachedKeysAreStoredAfterRope) {
  // In layer 0 the key of a token depends only on the token and, through RoPE, its position.
  TestModelSpec spec;
  ReferenceModel model = LoadOrDie(TestModelBytes(MakeTestModel(spec)));
  const ModelConfig& c = model.config();
  const int32_t token = 7;
  ReferenceCache at_zero = model.NewCache(1);
  ReferenceCache at_seven = model.NewCache(1);
  ASSERT_TRUE(model.ForwardAt(at_zero, std::span(&token, 1), std::vector<int32_t>{0}).ok());
  ASSERT_TRUE(model.ForwardAt(at_seven, std::span(&token, 1), std::vector<int32_t>{7}).ok());
  for (int h = 0; h < c.num_kv_heads; ++h) {
    const size_t offset = static_cast<size_t>(h * c.head_dim);
    std::vector<float> rotated(at_zero.k.begin() + static_cast<ptrdiff_t>(offset),
                               at_zero.k.begin() + static_cast<ptrdiff_t>(offset) + c.head_dim);
    ApplyRope(c, 7, rotated);
    for (int e = 0; e < c.head_dim; ++e) {
      EXPECT_NEAR(at_seven.k[offset + static_cast<size_t>(e)], rotated[static_cast<size_t>(e)],
                  1e-5);
    }
  }
  EXPECT_EQ(at_zero.v, at_seven.v);
}

TEST(ReferenceModelTest, F16WeightsAgreeWithF32WithinRounding) {
  TestModelSpec spec;
  spec.arch = Architecture::kQwen2;
  const TestModel f32_model = MakeTestModel(spec);
  spec.matrix_dtype = DType::kF16;
  const TestModel f16_model = MakeTestModel(spec);
  ReferenceModel f32 = LoadOrDie(TestModelBytes(f32_model));
  ReferenceModel f16 = LoadOrDie(TestModelBytes(f16_model));
  ReferenceCache a = f32.NewCache(8);
  ReferenceCache b = f16.NewCache(8);
  const std::vector<float> f32_logits = *f32.Forward(a, kTokens);
  const std::vector<float> f16_logits = *f16.Forward(b, kTokens);
  // The F16 file loads exactly its rounded values...
  EXPECT_LE(MaxDiff(f16_logits, NaiveTransformer(f16_model).Logits(kTokens, Iota(0, 6))), 1e-4);
  // ...which differ from the F32 ones by about 2^-11 relative, and so do the logits.
  const double diff = MaxDiff(f16_logits, f32_logits);
  EXPECT_GT(diff, 0.0);
  EXPECT_LE(diff, 1e-2);
}

TEST(ReferenceModelTest, QuantizedWeightsLoadAsTheirDequantizedValues) {
  // Rows of 256 values fit every block size (32 and the K-quants' 256).
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_1, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    TestModelSpec spec;
    spec.num_layers = 1;  // K-quant scale search is slow-ish; one layer is enough here
    spec.embedding_dim = 256;
    spec.ffn_dim = 256;
    spec.num_heads = 8;
    spec.num_kv_heads = 8;  // q_dim = kv_dim = 256
    spec.matrix_dtype = dtype;
    const TestModel test_model = MakeTestModel(spec);
    ReferenceModel model = LoadOrDie(TestModelBytes(test_model));
    ReferenceCache cache = model.NewCache(4);
    const std::vector<int32_t> tokens = {1, 30, 7};
    const std::vector<float> logits = *model.Forward(cache, tokens);
    EXPECT_LE(MaxDiff(logits, NaiveTransformer(test_model).Logits(tokens, Iota(0, 3))), 1e-4);
  }
}

class ReferenceModelErrorTest : public ::testing::Test {
 protected:
  ReferenceModelErrorTest() : model_(LoadOrDie(TestModelBytes(MakeTestModel(TestModelSpec())))) {
    cache_ = model_.NewCache(4);
    const std::vector<int32_t> tokens = {1, 2};
    EXPECT_TRUE(model_.Forward(cache_, tokens).ok());
    before_ = cache_;
  }

  void ExpectRejected(const Result<std::vector<float>>& result, const std::string& fragment) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.error().message().find(fragment), std::string::npos)
        << result.error().ToString();
    EXPECT_EQ(cache_.num_tokens, before_.num_tokens);
    EXPECT_EQ(cache_.k, before_.k);
    EXPECT_EQ(cache_.v, before_.v);
  }

  ReferenceModel model_;
  ReferenceCache cache_;
  ReferenceCache before_;
};

TEST_F(ReferenceModelErrorTest, TokenOutOfRange) {
  const int32_t vocab = model_.config().vocab_size;
  ExpectRejected(model_.Forward(cache_, std::vector<int32_t>{3, vocab}), "outside the vocabulary");
  ExpectRejected(model_.Forward(cache_, std::vector<int32_t>{-1}), "outside the vocabulary");
}

TEST_F(ReferenceModelErrorTest, CapacityExceeded) {
  ExpectRejected(model_.Forward(cache_, std::vector<int32_t>{1, 2, 3}), "capacity");
  ASSERT_TRUE(model_.Forward(cache_, std::vector<int32_t>{1, 2}).ok());
  before_ = cache_;
  ExpectRejected(model_.Forward(cache_, std::vector<int32_t>{1}), "capacity");
}

TEST_F(ReferenceModelErrorTest, BadPositions) {
  ExpectRejected(model_.ForwardAt(cache_, std::vector<int32_t>{1, 2}, std::vector<int32_t>{1}),
                 "positions");
  ExpectRejected(model_.ForwardAt(cache_, std::vector<int32_t>{1}, std::vector<int32_t>{-3}),
                 "negative");
}

TEST_F(ReferenceModelErrorTest, CacheOfAnotherShape) {
  ReferenceCache other;
  other.capacity_tokens = 4;
  other.k.resize(3);
  other.v.resize(3);
  Result<std::vector<float>> result = model_.Forward(other, std::vector<int32_t>{1});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), StatusCode::kInvalidArgument);
}

TEST(ReferenceModelLoadTest, EmptyForwardIsFine) {
  ReferenceModel model = LoadOrDie(TestModelBytes(MakeTestModel(TestModelSpec())));
  ReferenceCache cache = model.NewCache(0);
  Result<std::vector<float>> logits = model.Forward(cache, {});
  ASSERT_TRUE(logits.ok());
  EXPECT_TRUE(logits->empty());
}

TEST(ReferenceModelLoadTest, UnsupportedTensorTypeIsUnimplemented) {
  TestModel test_model = MakeTestModel(TestModelSpec());
  const TestTensor q = test_model.Get("blk.1.attn_q.weight");
  test_model.Remove(q.name);
  gguf::GgufWriter writer;
  WriteTestModel(test_model, writer);
  // I32 is a valid GGUF type that no weight dequantizer reads.
  ASSERT_TRUE(
      writer.AddTensor(q.name, DType::kI32, q.dims, std::vector<uint8_t>(q.values.size() * 4))
          .ok());
  const std::vector<uint8_t> bytes = writer.WriteToBuffer();
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
  ASSERT_TRUE(file.ok());
  Result<ReferenceModel> model = ReferenceModel::Load(*file);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.error().message().find("blk.1.attn_q.weight"), std::string::npos);
}

TEST(ReferenceModelLoadTest, WrongShapeIsCorrupt) {
  TestModel test_model = MakeTestModel(TestModelSpec());
  TestTensor* down = test_model.Find("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  std::swap(down->dims[0], down->dims[1]);  // [in, out] given as [out, in]
  down->bytes.clear();
  const std::vector<uint8_t> bytes = TestModelBytes(test_model);
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
  ASSERT_TRUE(file.ok());
  Result<ReferenceModel> model = ReferenceModel::Load(*file);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().code(), StatusCode::kCorrupt);
  EXPECT_NE(model.error().message().find("blk.0.ffn_down.weight"), std::string::npos);
}

}  // namespace
}  // namespace reprise::model
