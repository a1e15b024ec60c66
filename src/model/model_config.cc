#include "model/model_config.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "base/float16.h"

namespace reprise::model {
namespace {

Result<int> ReadPositiveInt(const gguf::GgufFile& file, const std::string& key) {
  REPRISE_ASSIGN_OR_RETURN(uint32_t v, file.GetU32(key));
  if (v == 0 || v > (1u << 24)) {
    return CorruptError("metadata '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<int>(v);
}

Status ExpectShape(const gguf::GgufFile& file, const std::string& name,
                   std::vector<uint64_t> dims, bool required = true) {
  const gguf::TensorInfo* t = file.FindTensor(name);
  if (t == nullptr) {
    if (!required) return Status::Ok();
    return CorruptError("tensor '" + name + "' is missing");
  }
  if (t->dims != dims) {
    std::string want = "[";
    for (size_t i = 0; i < dims.size(); ++i) want += (i ? ", " : "") + std::to_string(dims[i]);
    want += "]";
    return CorruptError("tensor '" + name + "' has shape " + t->ShapeString() + ", expected " +
                        want);
  }
  return Status::Ok();
}

// Every "blk.N.*" tensor must belong to a layer below block_count: a smaller block_count
// would silently drop the layers above it.
Status CheckLayerTensors(const gguf::GgufFile& file, int num_layers, const std::string& key) {
  constexpr std::string_view kPrefix = "blk.";
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (!t.name.starts_with(kPrefix)) continue;
    const std::string_view rest = t.name.substr(kPrefix.size());
    uint64_t layer = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    if (end == rest.data() || end == rest.data() + rest.size() || *end != '.') continue;
    if (ec == std::errc::result_out_of_range || layer >= static_cast<uint64_t>(num_layers)) {
      return CorruptError("tensor '" + std::string(t.name) + "' belongs to layer " +
                          std::string(rest.data(), end) + ", but metadata '" + key +
                          "' = " + std::to_string(num_layers));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view ArchitectureName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama: return "llama";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
  }
  return "?";
}

std::string tensor_names::Layer(int layer, std::string_view suffix) {
  std::string out = "blk." + std::to_string(layer) + ".";
  out += suffix;
  return out;
}

Result<ModelConfig> ModelConfig::FromGguf(const gguf::GgufFile& file) {
  ModelConfig c;
  REPRISE_ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  if (arch == "llama") {
    c.arch = Architecture::kLlama;
    c.rope_style = RopeStyle::kInterleaved;
  } else if (arch == "qwen2") {
    c.arch = Architecture::kQwen2;
    c.rope_style = RopeStyle::kNeox;
    c.has_qkv_bias = true;
  } else if (arch == "qwen3") {
    c.arch = Architecture::kQwen3;
    c.rope_style = RopeStyle::kNeox;
    c.has_qk_norm = true;
  } else {
    return UnimplementedError("architecture '" + std::string(arch) +
                              "' is not supported (supported: llama, qwen2, qwen3)");
  }
  REPRISE_ASSIGN_OR_RETURN(std::string_view name, file.GetStringOr("general.name", ""));
  c.name = std::string(name);
  const std::string p = std::string(arch) + ".";
  REPRISE_ASSIGN_OR_RETURN(c.num_layers, ReadPositiveInt(file, p + "block_count"));
  REPRISE_RETURN_IF_ERROR(CheckLayerTensors(file, c.num_layers, p + "block_count"));
  REPRISE_ASSIGN_OR_RETURN(c.embedding_dim, ReadPositiveInt(file, p + "embedding_length"));
  REPRISE_ASSIGN_OR_RETURN(c.ffn_dim, ReadPositiveInt(file, p + "feed_forward_length"));
  REPRISE_ASSIGN_OR_RETURN(c.num_heads, ReadPositiveInt(file, p + "attention.head_count"));
  if (file.HasKey(p + "attention.head_count_kv")) {
    REPRISE_ASSIGN_OR_RETURN(c.num_kv_heads, ReadPositiveInt(file, p + "attention.head_count_kv"));
  } else {
    c.num_kv_heads = c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return CorruptError("head_count " + std::to_string(c.num_heads) +
                        " is not a multiple of head_count_kv " + std::to_string(c.num_kv_heads));
  }
  if (file.HasKey(p + "attention.key_length")) {
    REPRISE_ASSIGN_OR_RETURN(c.head_dim, ReadPositiveInt(file, p + "attention.key_length"));
    if (file.HasKey(p + "attention.value_length")) {
      REPRISE_ASSIGN_OR_RETURN(int v, ReadPositiveInt(file, p + "attention.value_length"));
      if (v != c.head_dim) {
        return UnimplementedError("attention.value_length " + std::to_string(v) +
                                  " differs from key_length " + std::to_string(c.head_dim));
      }
    }
  } else {
    if (c.embedding_dim % c.num_heads != 0) {
      return CorruptError("embedding_length is not a multiple of head_count");
    }
    c.head_dim = c.embedding_dim / c.num_heads;
  }
  if (c.head_dim % 2 != 0) return CorruptError("head dimension must be even");
  REPRISE_ASSIGN_OR_RETURN(c.context_length, ReadPositiveInt(file, p + "context_length"));
  REPRISE_ASSIGN_OR_RETURN(c.rms_eps, file.GetF32Or(p + "attention.layer_norm_rms_epsilon", 1e-5f));
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f)) return CorruptError("RMS norm epsilon out of range");
  REPRISE_ASSIGN_OR_RETURN(c.rope_theta, file.GetF32Or(p + "rope.freq_base", 10000.0f));
  if (!(c.rope_theta > 1.0f && std::isfinite(c.rope_theta))) {
    return CorruptError("rope.freq_base out of range");
  }
  REPRISE_ASSIGN_OR_RETURN(uint32_t rope_dims,
                           file.GetU32Or(p + "rope.dimension_count",
                                         static_cast<uint32_t>(c.head_dim)));
  if (rope_dims == 0 || rope_dims > static_cast<uint32_t>(c.head_dim) || rope_dims % 2) {
    return CorruptError("rope.dimension_count " + std::to_string(rope_dims) +
                        " is invalid for head dimension " + std::to_string(c.head_dim));
  }
  c.rope_dims = static_cast<int>(rope_dims);
  if (file.HasKey(p + "rope.scaling.type")) {
    REPRISE_ASSIGN_OR_RETURN(std::string_view type, file.GetString(p + "rope.scaling.type"));
    if (type != "none" && type != "llama3") {
      return UnimplementedError("rope scaling '" + std::string(type) + "' is not supported");
    }
  }

  // The vocabulary size is the embedding's row count (the tokenizer may list fewer).
  const gguf::TensorInfo* embd = file.FindTensor(tensor_names::kTokenEmbedding);
  if (embd == nullptr) return CorruptError("tensor 'token_embd.weight' is missing");
  if (embd->dims.size() != 2 || embd->dims[0] != static_cast<uint64_t>(c.embedding_dim)) {
    return CorruptError("tensor 'token_embd.weight' has shape " + embd->ShapeString() +
                        ", expected [" + std::to_string(c.embedding_dim) + ", vocab]");
  }
  // Token ids are int32 everywhere; the tokenizer allows at most 2^30 tokens.
  if (embd->dims[1] > (uint64_t{1} << 30)) {
    return CorruptError("tensor 'token_embd.weight' has " + std::to_string(embd->dims[1]) +
                        " rows; vocabularies of more than 2^30 tokens are not supported");
  }
  c.vocab_size = static_cast<int>(embd->dims[1]);
  c.tied_embeddings = file.FindTensor(tensor_names::kOutput) == nullptr;

  const uint64_t d = static_cast<uint64_t>(c.embedding_dim);
  const uint64_t qd = static_cast<uint64_t>(c.q_dim());
  const uint64_t kvd = static_cast<uint64_t>(c.kv_dim());
  const uint64_t ff = static_cast<uint64_t>(c.ffn_dim);
  const uint64_t hd = static_cast<uint64_t>(c.head_dim);
  REPRISE_RETURN_IF_ERROR(ExpectShape(file, tensor_names::kOutputNorm, {d}));
  REPRISE_RETURN_IF_ERROR(ExpectShape(file, tensor_names::kOutput,
                                      {d, static_cast<uint64_t>(c.vocab_size)}, false));
  for (int l = 0; l < c.num_layers; ++l) {
    using tensor_names::Layer;
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_norm.weight"), {d}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_q.weight"), {d, qd}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_k.weight"), {d, kvd}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_v.weight"), {d, kvd}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_output.weight"), {qd, d}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "ffn_norm.weight"), {d}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "ffn_gate.weight"), {d, ff}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "ffn_up.weight"), {d, ff}));
    REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "ffn_down.weight"), {ff, d}));
    if (c.has_qkv_bias) {
      REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_q.bias"), {qd}));
      REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_k.bias"), {kvd}));
      REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_v.bias"), {kvd}));
    }
    if (c.has_qk_norm) {
      REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_q_norm.weight"), {hd}));
      REPRISE_RETURN_IF_ERROR(ExpectShape(file, Layer(l, "attn_k_norm.weight"), {hd}));
    }
  }

  if (const gguf::TensorInfo* freqs = file.FindTensor(tensor_names::kRopeFreqs)) {
    if (freqs->dims != std::vector<uint64_t>{static_cast<uint64_t>(c.rope_dims / 2)} ||
        (freqs->dtype != DType::kF32 && freqs->dtype != DType::kF16)) {
      return CorruptError("tensor 'rope_freqs.weight' must be f32/f16 of shape [" +
                          std::to_string(c.rope_dims / 2) + "], is " + freqs->ShapeString());
    }
    c.rope_freq_factors.resize(static_cast<size_t>(c.rope_dims / 2));
    for (size_t i = 0; i < c.rope_freq_factors.size(); ++i) {
      if (freqs->dtype == DType::kF32) {
        std::memcpy(&c.rope_freq_factors[i], freqs->data.data() + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, freqs->data.data() + 2 * i, 2);
        c.rope_freq_factors[i] = F16ToF32(h);
      }
      if (!(c.rope_freq_factors[i] > 0.0f) || !std::isfinite(c.rope_freq_factors[i])) {
        return CorruptError("rope_freqs.weight holds a non-positive factor");
      }
    }
  }
  return c;
}

std::string ModelConfig::Summary() const {
  std::string s(ArchitectureName(arch));
  s += ", " + std::to_string(num_layers) + " layers, dim " + std::to_string(embedding_dim) +
       ", " + std::to_string(num_heads) + " heads (" + std::to_string(num_kv_heads) +
       " kv, head " + std::to_string(head_dim) + "), ffn " + std::to_string(ffn_dim) +
       ", vocab " + std::to_string(vocab_size) + ", context " + std::to_string(context_length) +
       ", rope " + (rope_style == RopeStyle::kNeox ? "neox" : "interleaved") + " theta " +
       std::to_string(static_cast<long long>(rope_theta)) +
       (rope_freq_factors.empty() ? "" : " (scaled)") + (tied_embeddings ? ", tied output" : "") +
       (has_qkv_bias ? ", qkv bias" : "") + (has_qk_norm ? ", qk norm" : "");
  return s;
}

}  // namespace reprise::model
