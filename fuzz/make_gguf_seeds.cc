// Writes the GGUF fuzz target's seed corpus into a folder (built, not kept in git): small
// valid files that reach every part of the parser — a header with one key, nested arrays,
// a version 2 file with custom alignment and quantized tensors, and a whole tiny Llama model
// with its tokenizer (so ModelConfig and the vocabulary readers run too).
//
//   reprise_make_gguf_seeds OUT_DIR
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "model/test_model_builder.h"

namespace {

using reprise::DType;
using reprise::gguf::GgufWriter;

// Little-endian bytes of a GGUF file the writer cannot express (arrays of arrays).
class RawGguf {
 public:
  void U32(uint32_t v) { Put(&v, 4); }
  void U64(uint64_t v) { Put(&v, 8); }
  void Str(const std::string& s) {
    U64(s.size());
    Put(s.data(), s.size());
  }
  void Put4(const char* magic) { Put(magic, 4); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void Put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

// GGUF value types (the spec's numbering).
constexpr uint32_t kU32 = 4, kString = 8, kArray = 9;

std::vector<uint8_t> Minimal() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  return w.WriteToBuffer();
}

std::vector<uint8_t> NestedArrays() {
  RawGguf g;
  g.Put4("GGUF");
  g.U32(3);  // version
  g.U64(0);  // tensors
  g.U64(1);  // metadata keys
  g.Str("nest");
  g.U32(kArray);
  g.U32(kArray);  // an array of two arrays
  g.U64(2);
  g.U32(kU32);  // [1, 2]
  g.U64(2);
  g.U32(1);
  g.U32(2);
  g.U32(kString);  // ["z"]
  g.U64(1);
  g.Str("z");
  return g.bytes();
}

// Version 2 has the layout of version 3 (64-bit counts, little-endian).
std::vector<uint8_t> QuantizedV2() {
  GgufWriter w;
  w.SetU32("general.alignment", 256);
  std::vector<uint8_t> q8(34 * 2), q4(18);  // two Q8_0 blocks, one Q4_0 block
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < q4.size(); ++i) q4[i] = static_cast<uint8_t>(i * 7);
  if (!w.AddTensor("a", DType::kQ8_0, {64}, q8).ok()) return {};
  if (!w.AddTensor("b", DType::kQ4_0, {32}, q4).ok()) return {};
  std::vector<uint8_t> bytes = w.WriteToBuffer();
  bytes[4] = 2;
  return bytes;
}

std::vector<uint8_t> TinyLlamaF16() {
  reprise::model::TestModelSpec spec;
  spec.num_layers = 1;
  spec.embedding_dim = 16;
  spec.ffn_dim = 16;
  spec.vocab_size = 16;
  spec.matrix_dtype = DType::kF16;
  GgufWriter w;
  reprise::model::WriteTestModel(reprise::model::MakeTestModel(spec), w);
  // A SentencePiece vocabulary of the model's size: specials, byte-fallback-free pieces.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (const char* piece : {"\u2581", "a", "b", "c", "\u2581a", "\u2581b", "ab", "ba", "ca", "abc",
                            "\u2581the", ".", "d"}) {
    tokens.push_back(piece);
    scores.push_back(-static_cast<float>(tokens.size()));
    types.push_back(1);  // normal
  }
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  w.SetF32Array("tokenizer.ggml.scores", scores);
  w.SetI32Array("tokenizer.ggml.token_type", types);
  w.SetU32("tokenizer.ggml.bos_token_id", 1);
  w.SetU32("tokenizer.ggml.eos_token_id", 2);
  return w.WriteToBuffer();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::pair<const char*, std::vector<uint8_t>> seeds[] = {
      {"minimal.gguf", Minimal()},
      {"nested.gguf", NestedArrays()},
      {"quant_v2.gguf", QuantizedV2()},
      {"tiny_llama_f16.gguf", TinyLlamaF16()}};
  for (const auto& [name, bytes] : seeds) {
    if (bytes.empty()) {
      std::fprintf(stderr, "cannot build seed %s\n", name);
      return 1;
    }
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name);
      return 1;
    }
  }
  return 0;
}
