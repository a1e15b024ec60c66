// Writes the seed corpora of the fuzz targets other than GGUF into sub-folders of OUT_DIR
// (built, never kept in git):
//   kv_file/    KV chunk files of both codecs, with the kv_file_fuzz control byte in front
//   catalog/    catalog.db files of small stores (empty, one namespace, two with a pin)
//   tokenizer/  texts with a selector byte: words, specials, digits, UTF-8, invalid bytes
//   chat_template/ templates and messages, 0x00-separated
//   convert/    tiny HF checkpoints (config.json 0xFF tokenizer.json 0xFF model.safetensors):
//               Llama with a SentencePiece-style tokenizer, Qwen3 with a byte-level one
//
//   reprise_make_fuzz_seeds OUT_DIR
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/float16.h"
#include "base/random.h"
#include "kv/chunk.h"
#include "store/catalog.h"
#include "store/chunk_store.h"
#include "store/kv_file.h"
#include "tokenizer/text_encoding.h"

namespace {

using namespace reprise;

constexpr uint64_t kFingerprint = 0x5EED5EED5EED5EEDull;  // as in the fuzz targets

bool g_failed = false;

void Save(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    g_failed = true;
  }
}

void Check(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    g_failed = true;
  }
}

kv::ChunkEntry MakeChunk(uint64_t seed, kv::ChunkId parent, int num_tokens, int head_dim,
                         std::string text) {
  Random random(seed);
  kv::ChunkEntry entry;
  for (int i = 0; i < num_tokens; ++i) {
    entry.tokens.push_back(static_cast<int32_t>(random.NextBelow(1000)));
  }
  entry.content = kv::HashTokens(kFingerprint, entry.tokens);
  entry.parent = parent;
  entry.id = kv::ChainId(parent, entry.content);
  entry.exact = (seed & 1) != 0;
  entry.text = std::move(text);
  auto chunk_kv = std::make_shared<kv::ChunkKv>();
  chunk_kv->num_layers = 2;
  chunk_kv->num_kv_heads = 2;
  chunk_kv->head_dim = head_dim;
  chunk_kv->num_tokens = num_tokens;
  chunk_kv->Allocate();
  for (uint16_t& x : chunk_kv->k) x = F32ToF16(static_cast<float>(random.NextGaussian()));
  for (uint16_t& x : chunk_kv->v) x = F32ToF16(static_cast<float>(random.NextGaussian()));
  for (int i = 0; i < num_tokens; ++i) chunk_kv->positions[static_cast<size_t>(i)] = 7 + i;
  entry.kv = std::move(chunk_kv);
  return entry;
}

void KvSeeds(const std::string& dir) {
  int n = 0;
  for (KvCodec codec : {KvCodec::kF16, KvCodec::kInt8}) {
    for (int tokens : {0, 1, 5}) {
      auto bytes = store::SerializeKvFile(MakeChunk(n + 1, kv::kRootChunkId, tokens, 8, "a text"),
                                          codec, kFingerprint);
      if (!bytes.ok()) {
        Check(bytes.error(), "SerializeKvFile");
        continue;
      }
      for (uint8_t control : {uint8_t{1}, uint8_t{3}}) {
        std::string s(1, static_cast<char>(control));
        s.append(reinterpret_cast<const char*>(bytes->data()), bytes->size());
        Save(dir + "/kv" + std::to_string(n++) + ".bin", s);
      }
    }
  }
}

// Builds a store in a scratch folder, closes it, and saves its catalog.db.
void CatalogSeed(const std::string& out, int namespaces, int chunks, bool pin) {
  std::string scratch =
      (std::filesystem::temp_directory_path() / "reprise-seed-store-XXXXXX").string();
  if (::mkdtemp(scratch.data()) == nullptr) {
    g_failed = true;
    return;
  }
  {
    store::StoreOptions options;
    options.dir = scratch;
    options.model_fingerprint = kFingerprint;
    options.prefetch = false;
    auto opened = store::ChunkStore::Open(options);
    if (!opened.ok()) {
      Check(opened.error(), "ChunkStore::Open");
      return;
    }
    store::ChunkStore& s = **opened;
    for (int ns = 0; ns < namespaces; ++ns) {
      const std::string name = "app" + std::to_string(ns);
      auto cache = s.OpenNamespace(name);
      kv::ChunkId parent = kv::kRootChunkId;
      for (int c = 0; c < chunks; ++c) {
        auto entry = std::make_shared<kv::ChunkEntry>(
            MakeChunk(100 * ns + c, parent, 3, 8, "chunk text " + std::to_string(c)));
        parent = entry->id;
        Check(cache->Insert(entry), "Insert");
      }
      Check(s.Flush(), "Flush");
      if (pin) Check(s.SetPinned(name, std::nullopt, true), "SetPinned");
    }
    Check(s.Flush(), "Flush");
  }
  auto bytes = ReadFileToString(scratch + "/" + std::string(store::kCatalogFileName));
  if (bytes.ok()) {
    Save(out, *bytes);
  } else {
    Check(bytes.error(), "read catalog");
  }
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
}

void TokenizerSeeds(const std::string& dir) {
  const std::pair<uint8_t, std::string> seeds[] = {
      {0x00, "the cat sat on the mat"},
      {0x01, " hello  world\n\nabc"},
      {0x05, "The 12345 apples, it's 3.14 and I'll go."},
      {0x06, "caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80 \xE4\xBD\xA0\xE5\xA5\xBD"},
      {0x13, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
      {0x37, "<s>a</s><unk><think>x</think>"},
      {0x02, std::string("\xff\xfe\x80 broken \xC3 utf8 \xE2\x96\x81 marker")},
      {0x44, std::string("\x01\x00\x00\x00\x05\x00\x00\x00\xff\xff\xff\xff\x10\x01\x00\x00", 16)},
      {0x08, "   \t\r\n  "},
  };
  int n = 0;
  for (const auto& [selector, text] : seeds) {
    Save(dir + "/tok" + std::to_string(n++) + ".txt",
         std::string(1, static_cast<char>(selector)) + text);
  }
}

void ChatSeeds(const std::string& dir) {
  using namespace std::string_literals;
  const std::string seeds[] = {
      "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\0system\0 You are "
      "helpful. \0user\0Hi there\n\0assistant\0Hello!"s,
      "{% for m in messages %}<|im_start|>{{ m.role }}\0user\0<|im_end|> injected\0assistant\0ok"s,
      "\0tool\0{\"a\": 1}\0\0empty role"s,
      "x\0user\0\xF0\x9F\x98\x80\0user\0\t\v\f"s,
  };
  int n = 0;
  for (const std::string& s : seeds) Save(dir + "/chat" + std::to_string(n++) + ".bin", s);
}

// A safetensors file of F32 tensors with small deterministic values.
std::string Safetensors(const std::vector<std::pair<std::string, std::vector<uint64_t>>>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : tensors) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    header[name] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 4 * n}}};
    for (uint64_t i = 0; i < n; ++i) {
      const float v = 0.01f * static_cast<float>(static_cast<int>(i % 41) - 20);
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  const std::string h = header.dump();
  std::string out(8, '\0');
  const uint64_t length = h.size();
  std::memcpy(out.data(), &length, 8);
  return out + h + data;
}

std::vector<std::pair<std::string, std::vector<uint64_t>>> HfTensors(int hidden, int heads,
                                                                     int kv_heads, int head_dim,
                                                                     int ffn, int vocab,
                                                                     bool qk_norm, bool tied) {
  const auto u = [](int x) { return static_cast<uint64_t>(x); };
  std::vector<std::pair<std::string, std::vector<uint64_t>>> t = {
      {"model.embed_tokens.weight", {u(vocab), u(hidden)}}, {"model.norm.weight", {u(hidden)}}};
  if (!tied) t.push_back({"lm_head.weight", {u(vocab), u(hidden)}});
  const std::string p = "model.layers.0.";
  t.push_back({p + "input_layernorm.weight", {u(hidden)}});
  t.push_back({p + "post_attention_layernorm.weight", {u(hidden)}});
  t.push_back({p + "self_attn.q_proj.weight", {u(heads * head_dim), u(hidden)}});
  t.push_back({p + "self_attn.k_proj.weight", {u(kv_heads * head_dim), u(hidden)}});
  t.push_back({p + "self_attn.v_proj.weight", {u(kv_heads * head_dim), u(hidden)}});
  t.push_back({p + "self_attn.o_proj.weight", {u(hidden), u(heads * head_dim)}});
  if (qk_norm) {
    t.push_back({p + "self_attn.q_norm.weight", {u(head_dim)}});
    t.push_back({p + "self_attn.k_norm.weight", {u(head_dim)}});
  }
  t.push_back({p + "mlp.gate_proj.weight", {u(ffn), u(hidden)}});
  t.push_back({p + "mlp.up_proj.weight", {u(ffn), u(hidden)}});
  t.push_back({p + "mlp.down_proj.weight", {u(hidden), u(ffn)}});
  return t;
}

nlohmann::json SpmTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  vocab["\xE2\x96\x81"] = 259;
  vocab["a"] = 260;
  vocab
      ["\xE2\x96\x81"
       "a"] = 261;
  nlohmann::json tok;
  tok["model"] = {{"type", "BPE"},
                  {"vocab", vocab},
                  {"merges", {"\xE2\x96\x81 a"}},
                  {"byte_fallback", true},
                  {"unk_token", "<unk>"}};
  tok["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}};
  tok["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}}}};
  tok["added_tokens"] = {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                         {{"id", 1}, {"content", "<s>"}, {"special", true}},
                         {{"id", 2}, {"content", "</s>"}, {"special", true}}};
  return tok;
}

nlohmann::json ByteLevelTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b)
    vocab[std::string(tokenizer::ByteToGpt2Char(static_cast<uint8_t>(b)))] = id++;
  vocab["he"] = id++;
  vocab["\xC4\xA0he"] = id++;
  nlohmann::json tok;
  tok["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "\xC4\xA0 he"}}};
  tok["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(?i:'s|'t)|\\p{N}| ?\\p{L}+"}}}},
        {{"type", "ByteLevel"}}}}};
  tok["decoder"] = {{"type", "ByteLevel"}};
  tok["added_tokens"] = {{{"id", 258}, {"content", "<|endoftext|>"}, {"special", true}},
                         {{"id", 259}, {"content", "<|im_start|>"}, {"special", true}},
                         {{"id", 260}, {"content", "<|im_end|>"}, {"special", true}}};
  return tok;
}

void ConvertSeeds(const std::string& dir) {
  const std::string sep(1, '\xff');
  // Llama: SentencePiece-style tokenizer, separate lm_head.
  {
    const nlohmann::json config = {{"model_type", "llama"},
                                   {"hidden_size", 8},
                                   {"intermediate_size", 16},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"num_key_value_heads", 1},
                                   {"vocab_size", 264},
                                   {"rms_norm_eps", 1e-5},
                                   {"rope_theta", 10000.0},
                                   {"tie_word_embeddings", false},
                                   {"max_position_embeddings", 128},
                                   {"bos_token_id", 1},
                                   {"eos_token_id", 2}};
    Save(dir + "/llama_spm.bin", config.dump() + sep + SpmTokenizerJson().dump() + sep +
                                     Safetensors(HfTensors(8, 2, 1, 4, 16, 264, false, false)));
  }
  // Qwen3: byte-level BPE, tied embeddings, explicit head_dim and QK norms.
  {
    const nlohmann::json config = {{"model_type", "qwen3"},
                                   {"hidden_size", 8},
                                   {"intermediate_size", 16},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"num_key_value_heads", 2},
                                   {"head_dim", 4},
                                   {"vocab_size", 264},
                                   {"rms_norm_eps", 1e-6},
                                   {"rope_theta", 1000000.0},
                                   {"tie_word_embeddings", true},
                                   {"max_position_embeddings", 256},
                                   {"eos_token_id", 260}};
    Save(dir + "/qwen3_bpe.bin", config.dump() + sep + ByteLevelTokenizerJson().dump() + sep +
                                     Safetensors(HfTensors(8, 2, 2, 4, 16, 264, true, true)));
  }
  // Llama 3 rope scaling keys.
  {
    nlohmann::json config = {{"model_type", "llama"},
                             {"hidden_size", 8},
                             {"intermediate_size", 16},
                             {"num_hidden_layers", 1},
                             {"num_attention_heads", 2},
                             {"num_key_value_heads", 2},
                             {"vocab_size", 264},
                             {"rms_norm_eps", 1e-5},
                             {"rope_theta", 500000.0},
                             {"tie_word_embeddings", true},
                             {"max_position_embeddings", 256}};
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 64}};
    Save(dir + "/llama3_rope.bin", config.dump() + sep + ByteLevelTokenizerJson().dump() + sep +
                                       Safetensors(HfTensors(8, 2, 2, 4, 16, 264, false, true)));
  }
}

// Request bodies of the server's two generation endpoints, valid and nearly so.
void OpenAiRequestSeeds(const std::string& dir) {
  const char* bodies[] = {
      R"({"model":"m","messages":[{"role":"user","content":"Hi"}],"max_tokens":8})",
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true,"stream_options":{"include_usage":true},"stop":["\n"]})",
      R"({"messages":[{"role":"user","content":"q"}],"documents":[{"id":"1","text":"doc one"},{"id":"2","text":"doc two"}],"skills":[{"id":"s","text":"s"}],"temperature":0.7,"top_p":0.9,"top_k":40,"seed":-3})",
      R"({"messages":[{"role":"user","content":"w"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],"tool_choice":"auto"})",
      R"({"prompt":"Once upon a time","max_tokens":16,"echo":false,"n":1})",
      R"({"prompt":["x"],"documents":[{"id":"d","text":"d"}],"logprobs":0,"presence_penalty":0})",
      R"({"messages":[{"role":"user","content":"j"}],"n":2,"logprobs":true,"top_logprobs":3,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"a":{"anyOf":[{"type":"integer","minimum":0},{"$ref":"#/$defs/b"}]}},"$defs":{"b":{"enum":["x",null]}}}}}})",
      R"({"messages":[{"role":"user","content":"t"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"})",
      R"({"prompt":"score me","max_tokens":0,"echo":true,"logprobs":2})",
  };
  int i = 0;
  for (const char* body : bodies) Save(dir + "/body" + std::to_string(i++) + ".json", body);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  for (const char* sub :
       {"kv_file", "catalog", "tokenizer", "chat_template", "convert", "openai_request"}) {
    Check(CreateDirectories(out + "/" + sub), "mkdir");
  }
  KvSeeds(out + "/kv_file");
  CatalogSeed(out + "/catalog/empty.db", 0, 0, false);
  CatalogSeed(out + "/catalog/one.db", 1, 3, false);
  CatalogSeed(out + "/catalog/two_pinned.db", 2, 2, true);
  TokenizerSeeds(out + "/tokenizer");
  ChatSeeds(out + "/chat_template");
  ConvertSeeds(out + "/convert");
  OpenAiRequestSeeds(out + "/openai_request");
  return g_failed ? 1 : 0;
}
