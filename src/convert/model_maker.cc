#include "convert/model_maker.h"

#include <sys/stat.h>

#include <cmath>

#include "base/file_util.h"
#include "base/random.h"
#include "convert/rope_scaling.h"
#include "convert/tensor_encoder.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tiktoken_import.h"

namespace reprise::convert {
namespace {

using tokenizer::TokenType;

// Uniform values with standard deviation `stddev` (cheaper than Gaussians for 1e9 weights).
std::vector<float> RandomValues(Random& rng, uint64_t count, float stddev) {
  std::vector<float> out(count);
  const float half_width = stddev * std::sqrt(3.0f);
  for (float& x : out) x = (2.0f * rng.NextFloat() - 1.0f) * half_width;
  return out;
}

std::vector<float> NormWeights(Random& rng, uint64_t count) {
  std::vector<float> out(count);
  for (float& x : out) x = 1.0f + 0.1f * (rng.NextFloat() - 0.5f);
  return out;
}

// Llama 3's rank file has 128,000 entries, Qwen's 151,643.
Result<tokenizer::TiktokenFamily> DetectTiktokenFamily(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  if (lines == 128000) return tokenizer::TiktokenFamily::kLlama3;
  if (lines == 151643) return tokenizer::TiktokenFamily::kQwen;
  return InvalidArgumentError(path + ": " + std::to_string(lines) +
                              " ranks; expected the Llama 3 (128000) or Qwen (151643) file");
}

Result<tokenizer::Vocab> VocabForShape(const MakeModelOptions& options, const ModelShape& shape,
                                       std::string& description) {
  if (options.vocab_path.empty()) {
    description = "synthetic SPM, " + std::to_string(shape.vocab_size) + " tokens";
    return SyntheticVocab(shape.vocab_size);
  }
  REPRISE_ASSIGN_OR_RETURN(tokenizer::TiktokenFamily family,
                           DetectTiktokenFamily(options.vocab_path));
  REPRISE_ASSIGN_OR_RETURN(tokenizer::Vocab vocab,
                           tokenizer::VocabFromTiktoken(options.vocab_path, family));
  if (vocab.tokens.size() > static_cast<size_t>(shape.vocab_size)) {
    return InvalidArgumentError(
        "vocabulary of " + options.vocab_path + " has " + std::to_string(vocab.tokens.size()) +
        " tokens, more than the shape's " + std::to_string(shape.vocab_size));
  }
  // Pad to the embedding size, as the released models do.
  const size_t real = vocab.tokens.size();
  for (size_t i = real; i < static_cast<size_t>(shape.vocab_size); ++i) {
    vocab.tokens.push_back("[PAD" + std::to_string(i) + "]");
    if (!vocab.scores.empty()) vocab.scores.push_back(0.0f);
    if (!vocab.token_types.empty()) vocab.token_types.push_back(TokenType::kUnused);
  }
  description = (vocab.pre.empty() ? std::string("bpe") : vocab.pre) + " vocabulary from " +
                options.vocab_path + ", " + std::to_string(real) + " tokens (padded to " +
                std::to_string(shape.vocab_size) + ")";
  return vocab;
}

constexpr uint32_t kFileTypeQ4_K_M = 15;  // llama.cpp's general.file_type "mostly Q4_K_M"
constexpr uint32_t kFileTypeQ5_K_M = 17;  // "mostly Q5_K_M"

}  // namespace

bool UsesMoreBits(int layer, int num_layers) {
  const int eighth = num_layers / 8;
  return layer < eighth || layer >= 7 * num_layers / 8 || (layer - eighth) % 3 == 2;
}

const std::vector<ModelShape>& KnownShapes() {
  static const std::vector<ModelShape> shapes = {
      // name, arch, dim, layers, heads, kv, head, ffn, vocab, ctx, theta, eps, tied, llama3
      {"tiny", "llama", 64, 2, 4, 2, 16, 192, 512, 2048, 10000.0f, 1e-5f, true, false},
      {"tiny-qwen2", "qwen2", 64, 2, 4, 2, 16, 192, 512, 2048, 1000000.0f, 1e-6f, true, false},
      {"tiny-qwen3", "qwen3", 64, 2, 4, 2, 32, 192, 512, 2048, 1000000.0f, 1e-6f, true, false},
      // Llama 3 frequency scaling on a tiny model.
      {"tiny-llama3", "llama", 64, 2, 4, 2, 16, 192, 512, 2048, 500000.0f, 1e-5f, true, true},
      // Rows of 256 for the K-quants' super-blocks.
      {"tiny-256", "llama", 256, 2, 4, 2, 64, 512, 512, 2048, 10000.0f, 1e-5f, false, false},
      {"smollm2-135m", "llama", 576, 30, 9, 3, 64, 1536, 49152, 8192, 100000.0f, 1e-5f, true,
       false},
      {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 64, 4864, 151936, 32768, 1000000.0f, 1e-6f, true,
       false},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 1000000.0f, 1e-6f, true,
       false},
      {"llama3.2-1b", "llama", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 500000.0f, 1e-5f, true,
       true},
  };
  return shapes;
}

std::optional<ModelShape> FindShape(const std::string& name) {
  for (const ModelShape& s : KnownShapes()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

tokenizer::Vocab SyntheticVocab(int num_tokens) {
  tokenizer::Vocab vocab;
  vocab.kind = tokenizer::VocabKind::kSpm;
  auto add = [&](std::string text, float score, TokenType type) {
    vocab.tokens.push_back(std::move(text));
    vocab.scores.push_back(score);
    vocab.token_types.push_back(type);
  };
  add("<unk>", 0.0f, TokenType::kUnknown);
  add("<s>", 0.0f, TokenType::kControl);
  add("</s>", 0.0f, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0.0f, TokenType::kByte);
  }
  // Pieces: single characters, then letter strings of growing length, each also with the
  // U+2581 word-start marker, ordered by length so that shorter pieces score higher.
  const std::string space = "\xe2\x96\x81";
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  std::vector<std::string> level;
  for (char c : letters) level.emplace_back(1, c);
  std::vector<std::string> pieces;
  pieces.push_back(space);
  for (char c : std::string(".,!?'\"-:;()0123456789")) pieces.emplace_back(1, c);
  for (char c : std::string("ETAOINSHRDLUCMFWYPVBGKJQXZ")) pieces.emplace_back(1, c);
  while (static_cast<int>(vocab.tokens.size() + pieces.size()) < num_tokens) {
    for (const std::string& s : level) {
      pieces.push_back(s);
      pieces.push_back(space + s);
    }
    std::vector<std::string> next;
    for (const std::string& s : level) {
      for (char c : letters) {
        next.push_back(s + c);
        if (next.size() > static_cast<size_t>(num_tokens)) break;
      }
      if (next.size() > static_cast<size_t>(num_tokens)) break;
    }
    level = std::move(next);
  }
  for (size_t i = 0; static_cast<int>(vocab.tokens.size()) < num_tokens; ++i) {
    add(pieces[i], -static_cast<float>(i), TokenType::kNormal);
  }
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.add_bos = true;
  vocab.add_space_prefix = true;
  return vocab;
}

Result<MakeModelSummary> MakeModel(const MakeModelOptions& options, const std::string& out_path) {
  std::optional<ModelShape> found = FindShape(options.shape);
  if (!found) {
    std::string names;
    for (const ModelShape& s : KnownShapes()) names += (names.empty() ? "" : ", ") + s.name;
    return InvalidArgumentError("unknown shape '" + options.shape + "' (known: " + names + ")");
  }
  ModelShape shape = *found;
  if (options.num_layers) {
    if (*options.num_layers < 1 || *options.num_layers > kMaxMadeLayers) {
      return InvalidArgumentError("the number of layers must be in [1, " +
                                  std::to_string(kMaxMadeLayers) + "], not " +
                                  std::to_string(*options.num_layers));
    }
    shape.num_layers = *options.num_layers;
  }
  MakeModelSummary summary;
  REPRISE_ASSIGN_OR_RETURN(tokenizer::Vocab vocab,
                           VocabForShape(options, shape, summary.vocab_description));

  gguf::GgufWriter w;
  const std::string a = shape.arch + ".";
  w.SetString("general.architecture", shape.arch);
  w.SetString("general.name", "reprise-random-" + shape.name);
  w.SetU32(a + "context_length", static_cast<uint32_t>(shape.context_length));
  w.SetU32(a + "embedding_length", static_cast<uint32_t>(shape.embedding_dim));
  w.SetU32(a + "feed_forward_length", static_cast<uint32_t>(shape.ffn_dim));
  w.SetU32(a + "block_count", static_cast<uint32_t>(shape.num_layers));
  w.SetU32(a + "attention.head_count", static_cast<uint32_t>(shape.num_heads));
  w.SetU32(a + "attention.head_count_kv", static_cast<uint32_t>(shape.num_kv_heads));
  w.SetF32(a + "attention.layer_norm_rms_epsilon", shape.rms_eps);
  w.SetF32(a + "rope.freq_base", shape.rope_theta);
  w.SetU32(a + "rope.dimension_count", static_cast<uint32_t>(shape.head_dim));
  if (shape.head_dim * shape.num_heads != shape.embedding_dim) {
    w.SetU32(a + "attention.key_length", static_cast<uint32_t>(shape.head_dim));
    w.SetU32(a + "attention.value_length", static_cast<uint32_t>(shape.head_dim));
  }
  w.SetU32(a + "vocab_size", static_cast<uint32_t>(shape.vocab_size));
  if (shape.llama3_rope_scaling) {
    w.SetString(a + "rope.scaling.type", "llama3");
    w.SetF32(a + "rope.scaling.factor", 32.0f);
    w.SetU32(a + "rope.scaling.original_context_length", 8192);
  }
  tokenizer::WriteVocabToGguf(vocab, w);
  if (options.k_m_mix && options.weight_type != DType::kQ4_K &&
      options.weight_type != DType::kQ5_K) {
    return InvalidArgumentError("the K_M mix needs weight type Q4_K or Q5_K");
  }
  SetFileType(w, options.weight_type);
  if (options.k_m_mix) {
    w.SetU32("general.file_type",
             options.weight_type == DType::kQ4_K ? kFileTypeQ4_K_M : kFileTypeQ5_K_M);
  }

  Random rng(options.seed);
  const DType type = options.weight_type;
  const uint64_t d = static_cast<uint64_t>(shape.embedding_dim);
  const uint64_t qd = static_cast<uint64_t>(shape.num_heads * shape.head_dim);
  const uint64_t kvd = static_cast<uint64_t>(shape.num_kv_heads * shape.head_dim);
  const uint64_t ff = static_cast<uint64_t>(shape.ffn_dim);
  const uint64_t v = static_cast<uint64_t>(shape.vocab_size);
  uint64_t params = 0;
  // The stored type of a matrix: `type`, or Q6_K where the K_M mix puts more bits.
  auto matrix = [&](const std::string& name, uint64_t in, uint64_t out, float stddev,
                    bool more_bits = false) -> Status {
    params += in * out;
    const DType stored = options.k_m_mix && more_bits ? DType::kQ6_K : type;
    return AddEncodedTensor(w, name, {in, out}, RandomValues(rng, in * out, stddev), stored);
  };
  auto vector = [&](const std::string& name, std::vector<float> values) -> Status {
    params += values.size();
    return AddEncodedTensor(w, name, {values.size()}, values, DType::kF32);
  };
  REPRISE_RETURN_IF_ERROR(matrix("token_embd.weight", d, v, 0.5f, shape.tied_embeddings));
  const float proj = 1.0f / std::sqrt(static_cast<float>(d));
  const float down = 1.0f / std::sqrt(static_cast<float>(ff)) / std::sqrt(2.0f * shape.num_layers);
  const float attn_out =
      1.0f / std::sqrt(static_cast<float>(qd)) / std::sqrt(2.0f * shape.num_layers);
  for (int l = 0; l < shape.num_layers; ++l) {
    ReportProgress(options.progress, "making weights", l, shape.num_layers, "layers");
    const std::string b = "blk." + std::to_string(l) + ".";
    REPRISE_RETURN_IF_ERROR(vector(b + "attn_norm.weight", NormWeights(rng, d)));
    REPRISE_RETURN_IF_ERROR(matrix(b + "attn_q.weight", d, qd, proj));
    REPRISE_RETURN_IF_ERROR(matrix(b + "attn_k.weight", d, kvd, proj));
    const bool more_bits = UsesMoreBits(l, shape.num_layers);
    REPRISE_RETURN_IF_ERROR(matrix(b + "attn_v.weight", d, kvd, proj, more_bits));
    if (shape.arch == "qwen2") {
      REPRISE_RETURN_IF_ERROR(vector(b + "attn_q.bias", RandomValues(rng, qd, 0.1f)));
      REPRISE_RETURN_IF_ERROR(vector(b + "attn_k.bias", RandomValues(rng, kvd, 0.1f)));
      REPRISE_RETURN_IF_ERROR(vector(b + "attn_v.bias", RandomValues(rng, kvd, 0.1f)));
    }
    if (shape.arch == "qwen3") {
      const uint64_t hd = static_cast<uint64_t>(shape.head_dim);
      REPRISE_RETURN_IF_ERROR(vector(b + "attn_q_norm.weight", NormWeights(rng, hd)));
      REPRISE_RETURN_IF_ERROR(vector(b + "attn_k_norm.weight", NormWeights(rng, hd)));
    }
    REPRISE_RETURN_IF_ERROR(matrix(b + "attn_output.weight", qd, d, attn_out));
    REPRISE_RETURN_IF_ERROR(vector(b + "ffn_norm.weight", NormWeights(rng, d)));
    REPRISE_RETURN_IF_ERROR(matrix(b + "ffn_gate.weight", d, ff, proj));
    REPRISE_RETURN_IF_ERROR(matrix(b + "ffn_up.weight", d, ff, proj));
    REPRISE_RETURN_IF_ERROR(matrix(b + "ffn_down.weight", ff, d, down, more_bits));
  }
  REPRISE_RETURN_IF_ERROR(vector("output_norm.weight", NormWeights(rng, d)));
  if (!shape.tied_embeddings) {
    REPRISE_RETURN_IF_ERROR(matrix("output.weight", d, v, proj, /*more_bits=*/true));
  }
  if (shape.llama3_rope_scaling) {
    std::vector<float> factors =
        Llama3RopeFreqFactors(Llama3RopeScaling{}, shape.rope_theta, shape.head_dim);
    REPRISE_RETURN_IF_ERROR(vector("rope_freqs.weight", factors));
    params -= factors.size();
  }
  ReportProgress(options.progress, "making weights", shape.num_layers, shape.num_layers, "layers");
  ReportProgress(options.progress, "writing the file", 0, 1, "files");
  REPRISE_RETURN_IF_ERROR(w.WriteToFile(out_path));
  ReportProgress(options.progress, "writing the file", 1, 1, "files");
  summary.shape = shape;
  summary.num_parameters = params;
  struct stat st;
  if (::stat(out_path.c_str(), &st) == 0) summary.file_bytes = static_cast<uint64_t>(st.st_size);
  return summary;
}

}  // namespace reprise::convert
