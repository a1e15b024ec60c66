#include "convert/hf_importer.h"

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <system_error>

#include "convert/hf_tokenizer_import.h"
#include "convert/json_util.h"
#include "convert/rope_scaling.h"
#include "convert/safetensors_file.h"
#include "convert/tensor_encoder.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {
namespace {

struct HfConfig {
  std::string arch;  // GGUF architecture name
  int hidden = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  int context = 0;
  double rms_eps = 1e-5, rope_theta = 10000.0;
  bool tied = false;
  bool attention_bias = false;
  std::optional<Llama3RopeScaling> llama3_scaling;
};

// Bounds of the sizes we accept from config.json: far above every real model, low enough that
// products of two of them (e.g. heads x head_dim, vocab x hidden) fit 64 bits with room.
constexpr int kMaxHidden = 1 << 20, kMaxFfn = 1 << 22, kMaxLayers = 4096, kMaxHeads = 4096;
constexpr int kMaxHeadDim = 1 << 14, kMaxVocab = 1 << 24, kMaxContext = 1 << 24;

Result<HfConfig> ReadConfig(const nlohmann::json& c, const std::string& what) {
  if (!c.is_object()) return CorruptError(what + ": not a JSON object");
  HfConfig h;
  REPRISE_ASSIGN_OR_RETURN(std::optional<std::string> type_field,
                           OptionalJson<std::string>(c, "model_type", what));
  std::string model_type = type_field.value_or("");
  auto architectures = c.find("architectures");
  if (model_type.empty() && architectures != c.end() && architectures->is_array() &&
      !architectures->empty() && (*architectures)[0].is_string()) {
    model_type = (*architectures)[0].get<std::string>();
  }
  if (model_type == "llama" || model_type == "LlamaForCausalLM") {
    h.arch = "llama";
  } else if (model_type == "qwen2" || model_type == "Qwen2ForCausalLM") {
    h.arch = "qwen2";
    h.attention_bias = true;
  } else if (model_type == "qwen3" || model_type == "Qwen3ForCausalLM") {
    h.arch = "qwen3";
  } else {
    return UnimplementedError(what + ": model_type '" + model_type +
                              "' is not supported (llama, qwen2, qwen3)");
  }
  REPRISE_ASSIGN_OR_RETURN(h.hidden, RequiredJson<int>(c, "hidden_size", what));
  REPRISE_ASSIGN_OR_RETURN(h.ffn, RequiredJson<int>(c, "intermediate_size", what));
  REPRISE_ASSIGN_OR_RETURN(h.layers, RequiredJson<int>(c, "num_hidden_layers", what));
  REPRISE_ASSIGN_OR_RETURN(h.heads, RequiredJson<int>(c, "num_attention_heads", what));
  REPRISE_ASSIGN_OR_RETURN(auto kv, OptionalJson<int>(c, "num_key_value_heads", what));
  h.kv_heads = kv.value_or(h.heads);
  REPRISE_ASSIGN_OR_RETURN(h.vocab, RequiredJson<int>(c, "vocab_size", what));
  REPRISE_ASSIGN_OR_RETURN(auto ctx, OptionalJson<int>(c, "max_position_embeddings", what));
  h.context = ctx.value_or(2048);
  REPRISE_ASSIGN_OR_RETURN(auto eps, OptionalJson<double>(c, "rms_norm_eps", what));
  h.rms_eps = eps.value_or(1e-5);
  REPRISE_ASSIGN_OR_RETURN(auto theta, OptionalJson<double>(c, "rope_theta", what));
  h.rope_theta = theta.value_or(10000.0);
  REPRISE_ASSIGN_OR_RETURN(auto tied, OptionalJson<bool>(c, "tie_word_embeddings", what));
  h.tied = tied.value_or(false);
  REPRISE_ASSIGN_OR_RETURN(auto bias, OptionalJson<bool>(c, "attention_bias", what));
  if (bias) h.attention_bias = *bias || h.arch == "qwen2";
  if (h.hidden <= 0 || h.ffn <= 0 || h.layers <= 0 || h.heads <= 0 || h.kv_heads <= 0 ||
      h.vocab <= 0 || h.heads % h.kv_heads != 0) {
    return CorruptError(what + ": inconsistent sizes (hidden, heads, kv heads, vocab)");
  }
  if (h.hidden > kMaxHidden || h.ffn > kMaxFfn || h.layers > kMaxLayers || h.heads > kMaxHeads ||
      h.vocab > kMaxVocab) {
    return CorruptError(what + ": sizes beyond any model we can run (hidden_size " +
                        std::to_string(h.hidden) + ", intermediate_size " + std::to_string(h.ffn) +
                        ", num_hidden_layers " + std::to_string(h.layers) +
                        ", num_attention_heads " + std::to_string(h.heads) + ", vocab_size " +
                        std::to_string(h.vocab) + ")");
  }
  if (h.context <= 0 || h.context > kMaxContext) {
    return CorruptError(what + ": max_position_embeddings " + std::to_string(h.context));
  }
  // The ranges the model loader accepts once they are written as f32 (model_config.cc): a
  // value that rounds to 0 or infinity there would give a file our own loader rejects.
  const float eps32 = static_cast<float>(h.rms_eps), theta32 = static_cast<float>(h.rope_theta);
  if (!(eps32 > 0.0f && eps32 < 1.0f)) {
    return CorruptError(what + ": rms_norm_eps " + std::to_string(h.rms_eps) +
                        " out of range (0 < eps < 1 as a 32-bit float)");
  }
  if (!(theta32 > 1.0f && std::isfinite(theta32))) {
    return CorruptError(what + ": rope_theta " + std::to_string(h.rope_theta) +
                        " out of range (> 1, finite as a 32-bit float)");
  }
  REPRISE_ASSIGN_OR_RETURN(auto head_dim, OptionalJson<int>(c, "head_dim", what));
  h.head_dim = head_dim.value_or(h.hidden / h.heads);
  if (h.head_dim <= 0 || h.head_dim % 2 != 0 || h.head_dim > kMaxHeadDim) {
    return CorruptError(what + ": bad head_dim");
  }
  auto rope_scaling = c.find("rope_scaling");
  if (rope_scaling != c.end() && rope_scaling->is_object()) {
    const nlohmann::json& rs = *rope_scaling;
    const std::string rs_what = what + " rope_scaling";
    REPRISE_ASSIGN_OR_RETURN(auto rope_type, OptionalJson<std::string>(rs, "rope_type", rs_what));
    REPRISE_ASSIGN_OR_RETURN(auto legacy_type, OptionalJson<std::string>(rs, "type", rs_what));
    const std::string type = rope_type.value_or(legacy_type.value_or(""));
    if (type == "llama3") {
      Llama3RopeScaling s;
      REPRISE_ASSIGN_OR_RETURN(auto factor, OptionalJson<float>(rs, "factor", rs_what));
      REPRISE_ASSIGN_OR_RETURN(auto low, OptionalJson<float>(rs, "low_freq_factor", rs_what));
      REPRISE_ASSIGN_OR_RETURN(auto high, OptionalJson<float>(rs, "high_freq_factor", rs_what));
      REPRISE_ASSIGN_OR_RETURN(auto original,
                               OptionalJson<int>(rs, "original_max_position_embeddings", rs_what));
      s.factor = factor.value_or(s.factor);
      s.low_freq_factor = low.value_or(s.low_freq_factor);
      s.high_freq_factor = high.value_or(s.high_freq_factor);
      s.original_context_length = original.value_or(s.original_context_length);
      // The blend between the two wavelengths divides by their difference.
      if (!(s.factor > 0) || !(s.low_freq_factor > 0) ||
          !(s.high_freq_factor > s.low_freq_factor) || s.original_context_length <= 0) {
        return CorruptError(rs_what + ": need factor > 0, 0 < low_freq_factor < " +
                            "high_freq_factor, original_max_position_embeddings > 0");
      }
      h.llama3_scaling = s;
    } else if (!type.empty() && type != "default") {
      return UnimplementedError(what + ": rope_scaling type '" + type + "' is not supported");
    }
  }
  return h;
}

// All tensors of the checkpoint, across shards, with tied-weight aliases resolved.
class Checkpoint {
 public:
  static Result<Checkpoint> Open(const std::string& dir) {
    Checkpoint cp;
    std::vector<std::string> files;
    const std::string index = dir + "/model.safetensors.index.json";
    std::error_code ec;
    if (std::filesystem::exists(index, ec)) {
      REPRISE_ASSIGN_OR_RETURN(nlohmann::json json, ReadJsonFile(index));
      REPRISE_ASSIGN_OR_RETURN(auto map, (RequiredJson<std::map<std::string, std::string>>(
                                             json, "weight_map", index)));
      std::set<std::string> unique;
      for (const auto& [name, file] : map) unique.insert(file);
      files.assign(unique.begin(), unique.end());
    } else if (std::filesystem::exists(dir + "/model.safetensors", ec)) {
      files.push_back("model.safetensors");
    } else {
      return NotFoundError(dir + ": no model.safetensors or model.safetensors.index.json");
    }
    for (const std::string& f : files) {
      if (f.find('/') != std::string::npos) return CorruptError(index + ": shard path " + f);
      REPRISE_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::Open(dir + "/" + f));
      cp.shards_.push_back(std::make_unique<SafetensorsFile>(std::move(shard)));
    }
    for (const auto& shard : cp.shards_) {
      for (const auto& [name, tensor] : shard->tensors()) cp.by_name_[name] = &tensor;
      for (const auto& [alias, target] : shard->metadata()) cp.aliases_[alias] = target;
    }
    return cp;
  }

  const SafetensorsTensor* Find(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    auto alias = aliases_.find(name);
    if (alias != aliases_.end()) {
      auto target = by_name_.find(alias->second);
      if (target != by_name_.end()) return target->second;
    }
    return nullptr;
  }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
  std::map<std::string, std::string> aliases_;
};

// Reorders the rows of a Q or K projection (or bias) from rotate-half to adjacent pairs
// within each head: new row h*d + 2i + j comes from old row h*d + j*d/2 + i.
std::vector<float> PermuteForInterleavedRope(const std::vector<float>& w, int num_heads,
                                             int head_dim, uint64_t row_length) {
  std::vector<float> out(w.size());
  const int half = head_dim / 2;
  for (int h = 0; h < num_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < 2; ++j) {
        const uint64_t dst = static_cast<uint64_t>(h * head_dim + 2 * i + j);
        const uint64_t src = static_cast<uint64_t>(h * head_dim + j * half + i);
        std::copy_n(w.begin() + static_cast<long>(src * row_length), row_length,
                    out.begin() + static_cast<long>(dst * row_length));
      }
    }
  }
  return out;
}

}  // namespace

Result<ImportSummary> ImportHfModel(const std::string& dir, const std::string& out_path,
                                    const HfImportOptions& options) {
  const std::string config_path = dir + "/config.json";
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json config_json, ReadJsonFile(config_path));
  REPRISE_ASSIGN_OR_RETURN(HfConfig h, ReadConfig(config_json, config_path));
  REPRISE_ASSIGN_OR_RETURN(Checkpoint cp, Checkpoint::Open(dir));
  REPRISE_ASSIGN_OR_RETURN(tokenizer::Vocab vocab, ImportHfTokenizer(dir, config_json, h.vocab));

  gguf::GgufWriter w;
  const std::string a = h.arch + ".";
  w.SetString("general.architecture", h.arch);
  w.SetString("general.name", std::filesystem::path(dir).filename().string());
  w.SetU32(a + "context_length", static_cast<uint32_t>(h.context));
  w.SetU32(a + "embedding_length", static_cast<uint32_t>(h.hidden));
  w.SetU32(a + "feed_forward_length", static_cast<uint32_t>(h.ffn));
  w.SetU32(a + "block_count", static_cast<uint32_t>(h.layers));
  w.SetU32(a + "attention.head_count", static_cast<uint32_t>(h.heads));
  w.SetU32(a + "attention.head_count_kv", static_cast<uint32_t>(h.kv_heads));
  w.SetF32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(h.rms_eps));
  w.SetF32(a + "rope.freq_base", static_cast<float>(h.rope_theta));
  w.SetU32(a + "rope.dimension_count", static_cast<uint32_t>(h.head_dim));
  if (h.head_dim != h.hidden / h.heads) {
    w.SetU32(a + "attention.key_length", static_cast<uint32_t>(h.head_dim));
    w.SetU32(a + "attention.value_length", static_cast<uint32_t>(h.head_dim));
  }
  w.SetU32(a + "vocab_size", static_cast<uint32_t>(vocab.tokens.size()));
  tokenizer::WriteVocabToGguf(vocab, w);

  DType main_type = DType::kF32;
  // Adds one tensor: reads `hf_name`, checks its shape [rows, row_length] (or [n] for
  // vectors), optionally permutes rows, and stores it as the chosen type.
  auto add = [&](const std::string& hf_name, const std::string& gguf_name,
                 std::vector<uint64_t> hf_shape, bool is_weight_matrix,
                 int permute_heads) -> Status {
    const SafetensorsTensor* t = cp.Find(hf_name);
    if (t == nullptr) return NotFoundError(dir + ": tensor '" + hf_name + "' is missing");
    if (t->shape != hf_shape) {
      std::string want;
      for (uint64_t d : hf_shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      return CorruptError(dir + ": tensor '" + hf_name + "' does not have shape [" + want + "]");
    }
    std::vector<float> values = ToFloat(t->dtype, t->data, t->num_elements());
    const uint64_t row_length = hf_shape.size() == 2 ? hf_shape[1] : 1;
    if (permute_heads > 0) {
      values = PermuteForInterleavedRope(values, permute_heads, h.head_dim, row_length);
    }
    std::vector<uint64_t> dims(hf_shape.rbegin(), hf_shape.rend());
    DType type = DType::kF32;
    if (is_weight_matrix) {
      type = options.weight_type.value_or(t->dtype);
      main_type = type;
    }
    return AddEncodedTensor(w, gguf_name, std::move(dims), values, type);
  };

  const uint64_t hidden = static_cast<uint64_t>(h.hidden);
  const uint64_t vocab_rows = static_cast<uint64_t>(h.vocab);
  const uint64_t qd = static_cast<uint64_t>(h.heads * h.head_dim);
  const uint64_t kvd = static_cast<uint64_t>(h.kv_heads * h.head_dim);
  const uint64_t ffn = static_cast<uint64_t>(h.ffn);
  const bool llama = h.arch == "llama";
  const std::string embed =
      cp.Find("model.embed_tokens.weight") ? "model.embed_tokens.weight" : "lm_head.weight";
  REPRISE_RETURN_IF_ERROR(add(embed, "token_embd.weight", {vocab_rows, hidden}, true, 0));
  for (int l = 0; l < h.layers; ++l) {
    ReportProgress(options.progress, "converting", l, h.layers, "layers");
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string b = "blk." + std::to_string(l) + ".";
    REPRISE_RETURN_IF_ERROR(add(p + "input_layernorm.weight", b + "attn_norm.weight", {hidden},
                                false, 0));
    REPRISE_RETURN_IF_ERROR(add(p + "self_attn.q_proj.weight", b + "attn_q.weight", {qd, hidden},
                                true, llama ? h.heads : 0));
    REPRISE_RETURN_IF_ERROR(add(p + "self_attn.k_proj.weight", b + "attn_k.weight",
                                {kvd, hidden}, true, llama ? h.kv_heads : 0));
    REPRISE_RETURN_IF_ERROR(add(p + "self_attn.v_proj.weight", b + "attn_v.weight",
                                {kvd, hidden}, true, 0));
    REPRISE_RETURN_IF_ERROR(add(p + "self_attn.o_proj.weight", b + "attn_output.weight",
                                {hidden, qd}, true, 0));
    if (h.attention_bias) {
      if (llama) {
        return UnimplementedError(dir + ": Llama checkpoints with attention biases");
      }
      REPRISE_RETURN_IF_ERROR(add(p + "self_attn.q_proj.bias", b + "attn_q.bias", {qd}, false, 0));
      REPRISE_RETURN_IF_ERROR(add(p + "self_attn.k_proj.bias", b + "attn_k.bias", {kvd}, false, 0));
      REPRISE_RETURN_IF_ERROR(add(p + "self_attn.v_proj.bias", b + "attn_v.bias", {kvd}, false, 0));
    }
    if (h.arch == "qwen3") {
      const uint64_t hd = static_cast<uint64_t>(h.head_dim);
      REPRISE_RETURN_IF_ERROR(add(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {hd},
                                  false, 0));
      REPRISE_RETURN_IF_ERROR(add(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {hd},
                                  false, 0));
    }
    REPRISE_RETURN_IF_ERROR(add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight",
                                {hidden}, false, 0));
    REPRISE_RETURN_IF_ERROR(add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight",
                                {ffn, hidden}, true, 0));
    REPRISE_RETURN_IF_ERROR(add(p + "mlp.up_proj.weight", b + "ffn_up.weight", {ffn, hidden},
                                true, 0));
    REPRISE_RETURN_IF_ERROR(add(p + "mlp.down_proj.weight", b + "ffn_down.weight",
                                {hidden, ffn}, true, 0));
  }
  REPRISE_RETURN_IF_ERROR(add("model.norm.weight", "output_norm.weight", {hidden}, false, 0));
  if (!h.tied && cp.Find("lm_head.weight") && embed != "lm_head.weight") {
    REPRISE_RETURN_IF_ERROR(add("lm_head.weight", "output.weight", {vocab_rows, hidden}, true, 0));
  }
  if (h.llama3_scaling) {
    std::vector<float> factors = Llama3RopeFreqFactors(
        *h.llama3_scaling, static_cast<float>(h.rope_theta), h.head_dim);
    REPRISE_RETURN_IF_ERROR(AddEncodedTensor(w, "rope_freqs.weight", {factors.size()}, factors,
                                             DType::kF32));
  }
  ReportProgress(options.progress, "converting", h.layers, h.layers, "layers");
  SetFileType(w, main_type);
  ReportProgress(options.progress, "writing the file", 0, 1, "files");
  REPRISE_RETURN_IF_ERROR(w.WriteToFile(out_path));
  ReportProgress(options.progress, "writing the file", 1, 1, "files");
  ImportSummary summary;
  summary.architecture = h.arch;
  summary.num_tensors = static_cast<int>(w.num_tensors());
  summary.vocab_size = static_cast<int>(vocab.tokens.size());
  struct stat st;
  if (::stat(out_path.c_str(), &st) == 0) summary.file_bytes = static_cast<uint64_t>(st.st_size);
  return summary;
}

}  // namespace reprise::convert
