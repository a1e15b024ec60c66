#include "model/model_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/test_model_builder.h"
#include "support/temp_dir.h"

namespace reprise::model {
namespace {

// Parses the bytes into a config; the bytes are kept alive by the caller.
Result<ModelConfig> ConfigOf(const std::vector<uint8_t>& bytes) {
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
  if (!file.ok()) return file.error();
  return ModelConfig::FromGguf(*file);
}

void ExpectError(const Result<ModelConfig>& config, StatusCode code, const std::string& fragment) {
  ASSERT_FALSE(config.ok()) << "expected an error mentioning '" << fragment << "'";
  EXPECT_EQ(config.error().code(), code) << config.error().ToString();
  EXPECT_NE(config.error().message().find(fragment), std::string::npos)
      << config.error().ToString();
}

std::vector<uint8_t> BytesWithout(const TestModel& model, const std::string& key) {
  gguf::GgufWriter writer;
  const std::string omit[] = {key};
  WriteTestModel(model, writer, omit);
  return writer.WriteToBuffer();
}

TEST(ModelConfigTest, ReadsLlama) {
  TestModelSpec spec;
  spec.num_layers = 3;
  spec.embedding_dim = 32;
  spec.ffn_dim = 40;
  spec.num_heads = 8;
  spec.num_kv_heads = 2;
  spec.vocab_size = 50;
  spec.context_length = 512;
  spec.rope_theta = 500000.0f;
  spec.rms_eps = 1e-6f;
  spec.has_rope_freqs = true;
  const TestModel model = MakeTestModel(spec);
  const std::vector<uint8_t> bytes = TestModelBytes(model);
  Result<ModelConfig> config = ConfigOf(bytes);
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  const ModelConfig& c = *config;
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.name, "test-llama");
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.embedding_dim, 32);
  EXPECT_EQ(c.ffn_dim, 40);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.q_dim(), 32);
  EXPECT_EQ(c.kv_dim(), 8);
  EXPECT_EQ(c.vocab_size, 50);
  EXPECT_EQ(c.context_length, 512);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rope_dims, 4);
  EXPECT_EQ(c.rope_style, RopeStyle::kInterleaved);
  EXPECT_EQ(c.rope_freq_factors, model.Get(tensor_names::kRopeFreqs).values);
  EXPECT_FALSE(c.has_qkv_bias);
  EXPECT_FALSE(c.has_qk_norm);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_NE(c.Summary().find("llama, 3 layers"), std::string::npos) << c.Summary();
}

TEST(ModelConfigTest, ReadsQwen2AndQwen3) {
  TestModelSpec spec;
  spec.arch = Architecture::kQwen2;
  spec.tied_embeddings = true;
  Result<ModelConfig> qwen2 = ConfigOf(TestModelBytes(MakeTestModel(spec)));
  ASSERT_TRUE(qwen2.ok()) << qwen2.error().ToString();
  EXPECT_EQ(qwen2->arch, Architecture::kQwen2);
  EXPECT_EQ(qwen2->rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(qwen2->has_qkv_bias);
  EXPECT_FALSE(qwen2->has_qk_norm);
  EXPECT_TRUE(qwen2->tied_embeddings);
  EXPECT_TRUE(qwen2->rope_freq_factors.empty());

  spec.arch = Architecture::kQwen3;
  spec.head_dim = 8;  // from attention.key_length, not embedding_dim / num_heads = 4
  spec.tied_embeddings = false;
  Result<ModelConfig> qwen3 = ConfigOf(TestModelBytes(MakeTestModel(spec)));
  ASSERT_TRUE(qwen3.ok()) << qwen3.error().ToString();
  EXPECT_EQ(qwen3->arch, Architecture::kQwen3);
  EXPECT_EQ(qwen3->rope_style, RopeStyle::kNeox);
  EXPECT_FALSE(qwen3->has_qkv_bias);
  EXPECT_TRUE(qwen3->has_qk_norm);
  EXPECT_EQ(qwen3->head_dim, 8);
  EXPECT_EQ(qwen3->q_dim(), 32);
  EXPECT_EQ(qwen3->rope_dims, 8);
}

TEST(ModelConfigTest, OptionalKeysHaveDefaults) {
  std::vector<uint8_t> bytes;
  {
    gguf::GgufWriter writer;
    const std::string omit[] = {"llama.attention.head_count_kv",
                                "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base"};
    // Without head_count_kv the model is MHA, so give it MHA weights.
    TestModelSpec spec;
    spec.num_kv_heads = spec.num_heads;
    WriteTestModel(MakeTestModel(spec), writer, omit);
    bytes = writer.WriteToBuffer();
  }
  Result<ModelConfig> config = ConfigOf(bytes);
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->num_kv_heads, config->num_heads);
  EXPECT_FLOAT_EQ(config->rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(config->rope_theta, 10000.0f);
}

TEST(ModelConfigTest, UnknownArchitectureIsUnimplemented) {
  gguf::GgufWriter writer;
  WriteTestModel(MakeTestModel(TestModelSpec()), writer);
  writer.SetString("general.architecture", "gpt2");
  ExpectError(ConfigOf(writer.WriteToBuffer()), StatusCode::kUnimplemented, "'gpt2'");
}

TEST(ModelConfigTest, MissingKeysAreNotFound) {
  const TestModel model = MakeTestModel(TestModelSpec());
  for (const std::string key :
       {"general.architecture", "llama.block_count", "llama.embedding_length",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.context_length"}) {
    SCOPED_TRACE(key);
    ExpectError(ConfigOf(BytesWithout(model, key)), StatusCode::kNotFound, key);
  }
}

TEST(ModelConfigTest, BadValuesAreCorrupt) {
  const TestModel model = MakeTestModel(TestModelSpec());  // 4 heads, 2 kv heads, head 4
  struct Case {
    std::string key;
    uint32_t value;
    std::string fragment;
  };
  const Case cases[] = {
      {"llama.attention.head_count_kv", 3, "not a multiple of head_count_kv"},
      {"llama.block_count", 0, "out of range"},
      {"llama.rope.dimension_count", 3, "rope.dimension_count"},
      {"llama.rope.dimension_count", 8, "rope.dimension_count"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key + " = " + std::to_string(c.value));
    gguf::GgufWriter writer;
    WriteTestModel(model, writer);
    writer.SetU32(c.key, c.value);
    ExpectError(ConfigOf(writer.WriteToBuffer()), StatusCode::kCorrupt, c.fragment);
  }
  gguf::GgufWriter writer;
  WriteTestModel(model, writer);
  writer.SetU32("llama.attention.key_length", 4);
  writer.SetU32("llama.attention.value_length", 6);
  ExpectError(ConfigOf(writer.WriteToBuffer()), StatusCode::kUnimplemented, "value_length");
}

TEST(ModelConfigTest, UnsupportedRopeScalingIsUnimplemented) {
  gguf::GgufWriter writer;
  WriteTestModel(MakeTestModel(TestModelSpec()), writer);
  writer.SetString("llama.rope.scaling.type", "yarn");
  ExpectError(ConfigOf(writer.WriteToBuffer()), StatusCode::kUnimplemented, "'yarn'");
}

TEST(ModelConfigTest, WrongOrMissingTensorsAreCorrupt) {
  TestModelSpec spec;
  spec.arch = Architecture::kQwen3;
  spec.has_rope_freqs = true;
  const TestModel original = MakeTestModel(spec);
  {
    TestModel m = original;
    TestTensor* k = m.Find("blk.1.attn_k.weight");
    k->dims = {16, 4};  // [embedding_dim, kv_dim] should be [16, 8]
    k->values.resize(64);
    k->bytes.clear();
    ExpectError(ConfigOf(TestModelBytes(m)), StatusCode::kCorrupt, "'blk.1.attn_k.weight'");
  }
  {
    TestModel m = original;
    m.Remove("blk.0.attn_q_norm.weight");
    ExpectError(ConfigOf(TestModelBytes(m)), StatusCode::kCorrupt,
                "'blk.0.attn_q_norm.weight' is missing");
  }
  {
    TestModel m = original;
    m.Remove("token_embd.weight");
    ExpectError(ConfigOf(TestModelBytes(m)), StatusCode::kCorrupt, "'token_embd.weight'");
  }
  {
    TestModel m = original;
    TestTensor* freqs = m.Find(tensor_names::kRopeFreqs);
    freqs->dims = {3};
    freqs->values.resize(3);
    freqs->bytes.clear();
    ExpectError(ConfigOf(TestModelBytes(m)), StatusCode::kCorrupt, "rope_freqs.weight");
  }
  {
    TestModel m = original;
    m.Find(tensor_names::kRopeFreqs)->values[1] = 0.0f;
    m.Find(tensor_names::kRopeFreqs)->bytes.clear();
    ExpectError(ConfigOf(TestModelBytes(m)), StatusCode::kCorrupt, "non-positive");
  }
  spec.arch = Architecture::kQwen2;
  TestModel qwen2 = MakeTestModel(spec);
  qwen2.Remove("blk.1.attn_v.bias");
  ExpectError(ConfigOf(TestModelBytes(qwen2)), StatusCode::kCorrupt, "'blk.1.attn_v.bias'");
}

// Issue 12: a block_count below the layers in the file dropped the layers above it silently.
TEST(ModelConfigTest, LayerTensorsPastBlockCountAreCorrupt) {
  TestModelSpec spec;
  spec.num_layers = 3;
  const TestModel model = MakeTestModel(spec);
  gguf::GgufWriter writer;
  const std::string omit[] = {"llama.block_count"};
  WriteTestModel(model, writer, omit);
  writer.SetU32("llama.block_count", 2);
  const std::vector<uint8_t> bytes = writer.WriteToBuffer();
  ExpectError(ConfigOf(bytes), StatusCode::kCorrupt, "'blk.2.");
  ExpectError(ConfigOf(bytes), StatusCode::kCorrupt, "block_count' = 2");

  // A name that only looks like a layer tensor ("blk.x") is not counted.
  TestModel extra = MakeTestModel(spec);
  extra.tensors.push_back(TestTensor{"blk.x.note", {1}, DType::kF32, {0.0f}, {}});
  extra.tensors.push_back(TestTensor{"blk.99", {1}, DType::kF32, {0.0f}, {}});
  const std::vector<uint8_t> extra_bytes = TestModelBytes(extra);
  EXPECT_TRUE(ConfigOf(extra_bytes).ok());
  // A layer number too large for 64 bits is past block_count too.
  TestModel huge = MakeTestModel(spec);
  huge.tensors.push_back(
      TestTensor{"blk.99999999999999999999999.attn_norm.weight", {1}, DType::kF32, {0.0f}, {}});
  const std::vector<uint8_t> huge_bytes = TestModelBytes(huge);
  ExpectError(ConfigOf(huge_bytes), StatusCode::kCorrupt, "belongs to layer 9999");
}

// Issue 12: an embedding of 2^31 rows became a negative vocab_size (int). The file is sparse:
// only its header is written, the 38 GB of Q4_0 rows are a hole that is never read.
TEST(ModelConfigTest, VocabularyOf2To31RowsIsCorrupt) {
  TestModelSpec spec;
  spec.num_layers = 1;
  spec.embedding_dim = 32;
  spec.num_heads = 4;
  spec.num_kv_heads = 4;
  spec.ffn_dim = 32;
  spec.vocab_size = 40;
  spec.tied_embeddings = true;
  spec.matrix_dtype = DType::kQ4_0;
  TestModel model = MakeTestModel(spec);
  // The embedding goes last, so that growing it only extends the file.
  TestTensor embd = model.Get(tensor_names::kTokenEmbedding);
  model.Remove(tensor_names::kTokenEmbedding);
  model.tensors.push_back(embd);
  std::vector<uint8_t> bytes = TestModelBytes(model);
  const std::string name = tensor_names::kTokenEmbedding;
  auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  ASSERT_NE(at, bytes.end());
  const size_t rows_field = static_cast<size_t>(at - bytes.begin()) + name.size() + 4 + 8;
  uint64_t rows;
  std::memcpy(&rows, bytes.data() + rows_field, 8);
  ASSERT_EQ(rows, 40u);  // the layout this test assumes
  ASSERT_TRUE(ConfigOf(bytes).ok());
  uint64_t data_end;  // where the embedding's data begins: everything before it is kept
  {
    Result<gguf::GgufFile> small = gguf::GgufFile::Parse(bytes);
    ASSERT_TRUE(small.ok());
    data_end = small->FindTensor(tensor_names::kTokenEmbedding)->offset_bytes;
  }
  rows = uint64_t{1} << 31;
  std::memcpy(bytes.data() + rows_field, &rows, 8);

  testing_support::TempDir dir;
  const std::string path = dir.path() + "/huge_vocab.gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(data_end));
  }
  if (::truncate(path.c_str(), static_cast<off_t>(data_end + rows * 18)) != 0) {
    GTEST_SKIP() << "this file system cannot hold a 38 GB sparse file";
  }
  Result<gguf::GgufFile> file = gguf::GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  ASSERT_EQ(file->FindTensor(tensor_names::kTokenEmbedding)->dims[1], rows);
  Result<ModelConfig> config = ModelConfig::FromGguf(*file);
  ExpectError(config, StatusCode::kCorrupt, "2147483648 rows");
}

}  // namespace
}  // namespace reprise::model
