#include "convert/hf_importer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/random.h"
#include "convert/hf_tokenizer_import.h"
#include "convert/safetensors_file.h"
#include "gguf/gguf_file.h"
#include "model/reference_model.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {
namespace {

int Argmax(std::span<const float> v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

// TinyStories-656K is an HF Llama (rotate-half Q/K): imported, permuted to adjacent-pair
// RoPE, and run by the reference forward pass, it must reproduce the float64 reference.
TEST(HfImporterTest, TinyStories656KReproducesGreedyReference) {
  REPRISE_REQUIRE_SHARED_FILE(config, "models/tinystories-656K/config.json");
  REPRISE_REQUIRE_SHARED_FILE(reference, "models/tinystories-656K/greedy_reference.json");
  const std::string dir = config.substr(0, config.rfind('/'));
  testing_support::TempDir tmp;
  const std::string out = tmp.path() + "/m.gguf";
  Result<ImportSummary> summary = ImportHfModel(dir, out, {});
  ASSERT_TRUE(summary.ok()) << summary.error().ToString();
  EXPECT_EQ(summary->architecture, "llama");
  EXPECT_EQ(summary->vocab_size, 2048);

  gguf::GgufFile file = std::move(gguf::GgufFile::Open(out)).value();
  EXPECT_EQ(file.FindTensor("output.weight"), nullptr);  // tied
  Result<model::ReferenceModel> model = model::ReferenceModel::Load(file);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  EXPECT_EQ(model->config().context_length, 512);
  EXPECT_FLOAT_EQ(model->config().rms_eps, 1e-6f);

  nlohmann::json ref = nlohmann::json::parse(std::move(ReadFileToString(reference)).value());
  std::vector<int> expected = ref["generated_ids"].get<std::vector<int>>();
  std::vector<std::vector<double>> expected_logits =
      ref["logits"].get<std::vector<std::vector<double>>>();
  model::ReferenceCache cache = model->NewCache(512);
  int token = 1;  // BOS
  std::vector<int> generated;
  for (size_t step = 0; step < expected.size(); ++step) {
    const int32_t input[] = {token};
    std::vector<float> logits = std::move(model->Forward(cache, input)).value();
    if (step < expected_logits.size()) {
      ASSERT_EQ(logits.size(), expected_logits[step].size());
      double max_diff = 0;
      for (size_t i = 0; i < logits.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(logits[i] - expected_logits[step][i]));
      }
      EXPECT_LT(max_diff, 1e-4) << "logits at position " << step;
    }
    token = Argmax(logits);
    generated.push_back(token);
    if (token == 2) break;
  }
  EXPECT_EQ(generated, expected);

  // The tokenizer: SPM vocabulary with the HF normalizer's space prefix and BOS.
  tokenizer::Vocab vocab = std::move(tokenizer::ReadVocabFromGguf(file)).value();
  EXPECT_EQ(vocab.kind, tokenizer::VocabKind::kSpm);
  EXPECT_TRUE(vocab.add_space_prefix);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_EQ(vocab.bos_id, 1);
  EXPECT_EQ(vocab.eos_id, 2);
  auto tok = std::move(tokenizer::Tokenizer::Create(vocab)).value();
  const std::string text = ref["generated_text"].get<std::string>();
  std::vector<int32_t> ids = tok->Encode(text, {.add_special = false});
  EXPECT_EQ(tok->Decode(ids), text);
}

// A small HF folder written by the test, for the Qwen layouts.
class SyntheticHfFolder {
 public:
  explicit SyntheticHfFolder(const std::string& dir) : dir_(dir) {}

  void AddTensor(const std::string& name, std::vector<uint64_t> shape, Random& rng) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> values(n);
    for (float& v : values) v = static_cast<float>(rng.NextGaussian() * 0.2);
    tensors_.push_back({name, shape, values});
  }

  void Write(const nlohmann::json& config, const nlohmann::json& tokenizer) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    std::string data;
    for (const auto& t : tensors_) {
      const uint64_t bytes = t.values.size() * 4;
      header[t.name] = {
          {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
      data.append(reinterpret_cast<const char*>(t.values.data()), bytes);
      offset += bytes;
    }
    std::string h = header.dump();
    std::string file(8, '\0');
    uint64_t hl = h.size();
    std::memcpy(file.data(), &hl, 8);
    file += h + data;
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/model.safetensors", file).ok());
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/config.json", config.dump()).ok());
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/tokenizer.json", tokenizer.dump()).ok());
  }

  const std::vector<float>& values(const std::string& name) const {
    for (const auto& t : tensors_) {
      if (t.name == name) return t.values;
    }
    static std::vector<float> none;
    return none;
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> shape;
    std::vector<float> values;
  };
  std::string dir_;
  std::vector<T> tensors_;
};

// A byte-level BPE tokenizer.json with the 256 byte characters and two merges.
nlohmann::json ByteLevelTokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  // GPT-2 byte-to-unicode: printable bytes map to themselves.
  int id = 0;
  for (int b = 33; b <= 126; ++b) vocab[std::string(1, static_cast<char>(b))] = id++;
  vocab["\xc4\xa0"] = id++;  // "Ġ" (space)
  vocab["he"] = id++;
  vocab["Ġhe"] = id++;
  nlohmann::json tok;
  tok["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "Ġ he"}}};
  tok["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(?i:'s|'t)|\\p{N}| ?\\p{L}+"}}}},
        {{"type", "ByteLevel"}}}}};
  tok["decoder"] = {{"type", "ByteLevel"}};
  tok["added_tokens"] = {{{"id", 100}, {"content", "<|endoftext|>"}, {"special", true}},
                         {{"id", 101}, {"content", "<|im_start|>"}, {"special", true}},
                         {{"id", 102}, {"content", "<|im_end|>"}, {"special", true}}};
  return tok;
}

TEST(HfImporterTest, Qwen3FolderKeepsRotateHalfLayoutAndQkNorms) {
  testing_support::TempDir tmp;
  SyntheticHfFolder folder(tmp.path());
  Random rng(5);
  const int hidden = 32, heads = 4, kv = 2, head_dim = 16, ffn = 64, vocab = 128, layers = 1;
  folder.AddTensor("model.embed_tokens.weight", {vocab, hidden}, rng);
  folder.AddTensor("model.norm.weight", {hidden}, rng);
  const std::string p = "model.layers.0.";
  folder.AddTensor(p + "input_layernorm.weight", {hidden}, rng);
  folder.AddTensor(p + "post_attention_layernorm.weight", {hidden}, rng);
  folder.AddTensor(p + "self_attn.q_proj.weight", {heads * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.k_proj.weight", {kv * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.v_proj.weight", {kv * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.o_proj.weight", {hidden, heads * head_dim}, rng);
  folder.AddTensor(p + "self_attn.q_norm.weight", {head_dim}, rng);
  folder.AddTensor(p + "self_attn.k_norm.weight", {head_dim}, rng);
  folder.AddTensor(p + "mlp.gate_proj.weight", {ffn, hidden}, rng);
  folder.AddTensor(p + "mlp.up_proj.weight", {ffn, hidden}, rng);
  folder.AddTensor(p + "mlp.down_proj.weight", {hidden, ffn}, rng);
  nlohmann::json config = {{"model_type", "qwen3"},        {"hidden_size", hidden},
                           {"intermediate_size", ffn},     {"num_hidden_layers", layers},
                           {"num_attention_heads", heads}, {"num_key_value_heads", kv},
                           {"head_dim", head_dim},         {"vocab_size", vocab},
                           {"rms_norm_eps", 1e-6},         {"rope_theta", 1000000.0},
                           {"tie_word_embeddings", true},  {"max_position_embeddings", 4096},
                           {"eos_token_id", 102}};
  folder.Write(config, ByteLevelTokenizer());
  const std::string out = tmp.path() + "/q.gguf";
  Result<ImportSummary> summary = ImportHfModel(tmp.path(), out, {});
  ASSERT_TRUE(summary.ok()) << summary.error().ToString();
  gguf::GgufFile file = std::move(gguf::GgufFile::Open(out)).value();
  EXPECT_EQ(*file.GetString("general.architecture"), "qwen3");
  EXPECT_EQ(*file.GetU32("qwen3.attention.key_length"), 16u);
  // No permutation for rotate-half architectures: attn_q holds q_proj as is.
  const gguf::TensorInfo* q = file.FindTensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<uint64_t>{32, 64}));
  ASSERT_EQ(q->dtype, DType::kF32);
  EXPECT_EQ(std::memcmp(q->data.data(), folder.values(p + "self_attn.q_proj.weight").data(),
                        q->size_bytes),
            0);
  ASSERT_NE(file.FindTensor("blk.0.attn_k_norm.weight"), nullptr);
  Result<model::ReferenceModel> m = model::ReferenceModel::Load(file);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_TRUE(m->config().has_qk_norm);

  tokenizer::Vocab v = std::move(tokenizer::ReadVocabFromGguf(file)).value();
  EXPECT_EQ(v.kind, tokenizer::VocabKind::kBpe);
  EXPECT_EQ(v.pre, "qwen2");
  EXPECT_EQ(v.tokens.size(), 128u);  // padded to the embedding
  EXPECT_EQ(v.eot_id, 102);
  EXPECT_EQ(v.merges.size(), 2u);
  EXPECT_EQ(v.type_of(101), tokenizer::TokenType::kControl);
}

TEST(HfImporterTest, ReportsMissingAndBrokenInputs) {
  testing_support::TempDir tmp;
  Result<ImportSummary> r = ImportHfModel(tmp.path(), tmp.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);

  ASSERT_TRUE(
      WriteFileAtomically(tmp.path() + "/config.json", "{\"model_type\": \"gpt_neox\"}").ok());
  r = ImportHfModel(tmp.path(), tmp.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kUnimplemented);

  ASSERT_TRUE(WriteFileAtomically(tmp.path() + "/config.json", "{not json").ok());
  r = ImportHfModel(tmp.path(), tmp.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kCorrupt);
}

// A complete one-layer Qwen3 folder in `dir`; returns its config.json.
nlohmann::json WriteTinyQwen3Folder(const std::string& dir) {
  SyntheticHfFolder folder(dir);
  Random rng(7);
  const uint64_t hidden = 32, heads = 4, kv = 2, head_dim = 16, ffn = 64, vocab = 128;
  folder.AddTensor("model.embed_tokens.weight", {vocab, hidden}, rng);
  folder.AddTensor("model.norm.weight", {hidden}, rng);
  const std::string p = "model.layers.0.";
  folder.AddTensor(p + "input_layernorm.weight", {hidden}, rng);
  folder.AddTensor(p + "post_attention_layernorm.weight", {hidden}, rng);
  folder.AddTensor(p + "self_attn.q_proj.weight", {heads * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.k_proj.weight", {kv * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.v_proj.weight", {kv * head_dim, hidden}, rng);
  folder.AddTensor(p + "self_attn.o_proj.weight", {hidden, heads * head_dim}, rng);
  folder.AddTensor(p + "self_attn.q_norm.weight", {head_dim}, rng);
  folder.AddTensor(p + "self_attn.k_norm.weight", {head_dim}, rng);
  folder.AddTensor(p + "mlp.gate_proj.weight", {ffn, hidden}, rng);
  folder.AddTensor(p + "mlp.up_proj.weight", {ffn, hidden}, rng);
  folder.AddTensor(p + "mlp.down_proj.weight", {hidden, ffn}, rng);
  nlohmann::json config = {
      {"model_type", "qwen3"},   {"hidden_size", hidden},        {"intermediate_size", ffn},
      {"num_hidden_layers", 1},  {"num_attention_heads", heads}, {"num_key_value_heads", kv},
      {"head_dim", head_dim},    {"vocab_size", vocab},          {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0}, {"tie_word_embeddings", true}};
  folder.Write(config, ByteLevelTokenizer());
  return config;
}

// Values of the wrong JSON type made nlohmann throw type_error out of the importer (the
// process aborted); each must now be a Corrupt status naming the file.
TEST(HfImporterTest, WrongJsonTypesInConfigAreCorruptNotThrown) {
  testing_support::TempDir tmp;
  const nlohmann::json good = WriteTinyQwen3Folder(tmp.path());
  const std::string out = tmp.path() + "/o.gguf";
  ASSERT_TRUE(ImportHfModel(tmp.path(), out, {}).ok());
  const nlohmann::json llama3 = {{"rope_type", "llama3"},
                                 {"factor", 8.0},
                                 {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 8192}};
  std::vector<std::pair<std::string, nlohmann::json>> cases;
  auto with = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json c = good;
    c[key] = value;
    return c;
  };
  auto with_scaling = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json rs = llama3;
    rs[key] = value;
    return with("rope_scaling", rs);
  };
  cases.push_back({"model_type number", with("model_type", 5)});
  cases.push_back({"config array", nlohmann::json::array({1, 2})});
  cases.push_back({"hidden_size string", with("hidden_size", "32")});
  cases.push_back({"hidden_size fraction", with("hidden_size", 32.5)});
  cases.push_back({"hidden_size past int", with("hidden_size", int64_t{1} << 40)});
  cases.push_back({"hidden_size huge", with("hidden_size", 1 << 30)});
  cases.push_back({"rms_norm_eps string", with("rms_norm_eps", "small")});
  cases.push_back({"rope_theta negative", with("rope_theta", -1.0)});
  // Found by the convert fuzz target: 1e-46 is positive as a double and 0 as the f32 the
  // GGUF holds, so the import wrote a file the loader then refused.
  cases.push_back({"rms_norm_eps below f32", with("rms_norm_eps", 1e-46)});
  cases.push_back({"rms_norm_eps one", with("rms_norm_eps", 1.0)});
  cases.push_back({"rope_theta one", with("rope_theta", 1.0)});
  cases.push_back({"rope_theta past f32", with("rope_theta", 1e39)});
  cases.push_back({"max_position_embeddings negative", with("max_position_embeddings", -5)});
  cases.push_back({"tie_word_embeddings string", with("tie_word_embeddings", "yes")});
  cases.push_back({"rope_type number", with("rope_scaling", {{"rope_type", 3}, {"type", 4}})});
  cases.push_back({"factor string", with_scaling("factor", "x")});
  cases.push_back({"low_freq_factor object", with_scaling("low_freq_factor", {{"a", 1}})});
  cases.push_back(
      {"original context string", with_scaling("original_max_position_embeddings", "8k")});
  cases.push_back({"equal frequency factors", with_scaling("high_freq_factor", 1.0)});
  for (const auto& [name, config] : cases) {
    ASSERT_TRUE(WriteFileAtomically(tmp.path() + "/config.json", config.dump()).ok());
    Result<ImportSummary> r = ImportHfModel(tmp.path(), out, {});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code(), StatusCode::kCorrupt) << name << ": " << r.error().ToString();
    EXPECT_NE(r.error().ToString().find("config.json"), std::string::npos) << name;
  }
  // A string rope type we do not know stays Unimplemented; a valid llama3 block is read.
  ASSERT_TRUE(WriteFileAtomically(tmp.path() + "/config.json",
                                  with("rope_scaling", {{"rope_type", "yarn"}}).dump())
                  .ok());
  EXPECT_EQ(ImportHfModel(tmp.path(), out, {}).error().code(), StatusCode::kUnimplemented);
  ASSERT_TRUE(
      WriteFileAtomically(tmp.path() + "/config.json", with("rope_scaling", llama3).dump()).ok());
  EXPECT_TRUE(ImportHfModel(tmp.path(), out, {}).ok());
}

TEST(HfImporterTest, WrongJsonTypesInTokenizerConfigAreCorruptOrIgnored) {
  testing_support::TempDir tmp;
  WriteTinyQwen3Folder(tmp.path());
  const std::string out = tmp.path() + "/o.gguf";
  const std::string tc = tmp.path() + "/tokenizer_config.json";
  // A named chat template whose name is not a string: skipped (it threw type_error).
  ASSERT_TRUE(WriteFileAtomically(
                  tc, R"({"chat_template": [{"name": 5, "template": "x"}], "bos_token": 7})")
                  .ok());
  Result<ImportSummary> r = ImportHfModel(tmp.path(), out, {});
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  for (const char* bad :
       {R"({"add_bos_token": "yes"})", R"({"add_eos_token": [1]})", "[1, 2]", R"("text")"}) {
    ASSERT_TRUE(WriteFileAtomically(tc, bad).ok());
    r = ImportHfModel(tmp.path(), out, {});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kCorrupt) << bad << ": " << r.error().ToString();
  }
}

// Found by fuzz/convert_fuzz: a vocabulary id written as a huge float (1E93) reached
// nlohmann's float-to-integer conversion, which is undefined behaviour (UBSan aborted).
TEST(HfImporterTest, VocabularyIdsMustBeIntegersInRange) {
  testing_support::TempDir tmp;
  const std::string dir = tmp.path();
  for (const char* vocab : {R"({"a": 1E93})", R"({"a": -5})", R"({"a": "x"})", R"({"a": 2.5})",
                            R"({"a": 18446744073709551615})", "[1, 2]"}) {
    const std::string tok = std::string(R"({"model": {"type": "BPE", "byte_fallback": true, )") +
                            R"("vocab": )" + vocab + R"(, "merges": []}})";
    ASSERT_TRUE(WriteFileAtomically(dir + "/tokenizer.json", tok).ok());
    Result<tokenizer::Vocab> r = ImportHfTokenizer(dir, nlohmann::json::object(), 264);
    ASSERT_FALSE(r.ok()) << vocab;
    EXPECT_EQ(r.error().code(), StatusCode::kCorrupt) << vocab << ": " << r.error().ToString();
  }
}

TEST(SafetensorsFileTest, RejectsBadHeaders) {
  testing_support::TempDir tmp;
  auto write = [&](const std::string& header, size_t data_bytes) {
    std::string file(8, '\0');
    uint64_t n = header.size();
    std::memcpy(file.data(), &n, 8);
    file += header + std::string(data_bytes, '\0');
    const std::string path = tmp.path() + "/x.safetensors";
    EXPECT_TRUE(WriteFileAtomically(path, file).ok());
    return SafetensorsFile::Open(path);
  };
  EXPECT_TRUE(write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8).ok());
  EXPECT_EQ(write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4).error().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(write(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8).error().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(write(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8).error().code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(write(R"({"a":{"dtype":"F32","shape":"x","data_offsets":[0,8]}})", 8).error().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(write("{oops", 8).error().code(), StatusCode::kCorrupt);
  const std::string path = tmp.path() + "/short";
  ASSERT_TRUE(WriteFileAtomically(path, "abc").ok());
  EXPECT_EQ(SafetensorsFile::Open(path).error().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace reprise::convert
