#include "model/reference_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>

#include "base/check.h"
#include "base/dtype.h"
#include "kernels/quantize.h"
#include "model/reference_ops.h"
#include "model/weight_check.h"

namespace reprise::model {
namespace {

std::string ShapeText(std::initializer_list<uint64_t> dims) {
  std::string s = "[";
  for (uint64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

// All values of a tensor as float32, row after row.
Result<std::vector<float>> DequantizeTensor(const gguf::TensorInfo& tensor) {
  const std::string name(tensor.name);
  if (!kernels::CanDequantize(tensor.dtype)) {
    return UnimplementedError("tensor '" + name + "' has type " +
                              std::string(DTypeName(tensor.dtype)) +
                              ", which the reference model cannot dequantize");
  }
  const DTypeInfo& info = GetDTypeInfo(tensor.dtype);
  const uint64_t row_length = tensor.row_length();
  if (row_length == 0 || row_length % info.block_elements != 0) {
    return CorruptError("tensor '" + name + "' has rows of " + std::to_string(row_length) +
                        " values, not a multiple of the " + std::string(info.name) +
                        " block size " + std::to_string(info.block_elements));
  }
  const uint64_t row_bytes = row_length / info.block_elements * info.block_bytes;
  const uint64_t num_rows = tensor.num_rows();
  if (tensor.data.size() != row_bytes * num_rows) {
    return CorruptError("tensor '" + name + "' holds " + std::to_string(tensor.data.size()) +
                        " bytes, expected " + std::to_string(row_bytes * num_rows));
  }
  std::vector<float> values(row_length * num_rows);
  for (uint64_t r = 0; r < num_rows; ++r) {
    const uint8_t* src = tensor.data.data() + r * row_bytes;
    float* dst = values.data() + r * row_length;
    if (tensor.dtype == DType::kF32) {
      std::memcpy(dst, src, row_bytes);
    } else {
      kernels::DequantizeRow(tensor.dtype, src, dst, static_cast<int64_t>(row_length));
    }
  }
  return values;
}

// The tensor `name`, checked to have GGUF dims `dims`, as float32.
Result<std::vector<float>> LoadTensor(const gguf::GgufFile& file, const std::string& name,
                                      std::initializer_list<uint64_t> dims) {
  const gguf::TensorInfo* tensor = file.FindTensor(name);
  if (tensor == nullptr) return CorruptError("tensor '" + name + "' is missing");
  if (tensor->dims != std::vector<uint64_t>(dims)) {
    return CorruptError("tensor '" + name + "' has shape " + tensor->ShapeString() + ", expected " +
                        ShapeText(dims));
  }
  return DequantizeTensor(*tensor);
}

// The K or V row of `slot` in `layer`: [kv_dim].
std::span<float> CacheRow(std::vector<float>& buffer, const ModelConfig& config,
                          int capacity_tokens, int layer, int slot) {
  const size_t kv_dim = static_cast<size_t>(config.kv_dim());
  const size_t row =
      static_cast<size_t>(layer) * static_cast<size_t>(capacity_tokens) + static_cast<size_t>(slot);
  return std::span<float>(buffer).subspan(row * kv_dim, kv_dim);
}

}  // namespace

Result<ReferenceModel> ReferenceModel::Load(const gguf::GgufFile& file) {
  ReferenceModel model;
  REPRISE_ASSIGN_OR_RETURN(model.config_, ModelConfig::FromGguf(file));
  REPRISE_RETURN_IF_ERROR(CheckWeightsFinite(file));
  const ModelConfig& c = model.config_;
  const uint64_t d = static_cast<uint64_t>(c.embedding_dim);
  const uint64_t qd = static_cast<uint64_t>(c.q_dim());
  const uint64_t kvd = static_cast<uint64_t>(c.kv_dim());
  const uint64_t ff = static_cast<uint64_t>(c.ffn_dim);
  const uint64_t hd = static_cast<uint64_t>(c.head_dim);
  const uint64_t vocab = static_cast<uint64_t>(c.vocab_size);

  // GGUF dims are [in, out]: a matrix of dims {in, out} has `out` rows of `in` values.
  auto load_matrix = [&file](const std::string& name, uint64_t in, uint64_t out) -> Result<Matrix> {
    Matrix m;
    REPRISE_ASSIGN_OR_RETURN(m.values, LoadTensor(file, name, {in, out}));
    m.num_rows = static_cast<int>(out);
    m.num_cols = static_cast<int>(in);
    return m;
  };
  auto load_vector = [&file](const std::string& name, uint64_t size) {
    return LoadTensor(file, name, {size});
  };

  REPRISE_ASSIGN_OR_RETURN(model.token_embd_, load_matrix(tensor_names::kTokenEmbedding, d, vocab));
  REPRISE_ASSIGN_OR_RETURN(model.output_norm_, load_vector(tensor_names::kOutputNorm, d));
  if (!c.tied_embeddings) {
    REPRISE_ASSIGN_OR_RETURN(model.output_, load_matrix(tensor_names::kOutput, d, vocab));
  }
  model.layers_.resize(static_cast<size_t>(c.num_layers));
  for (int l = 0; l < c.num_layers; ++l) {
    LayerWeights& w = model.layers_[static_cast<size_t>(l)];
    auto name = [l](const char* suffix) { return tensor_names::Layer(l, suffix); };
    REPRISE_ASSIGN_OR_RETURN(w.attn_norm, load_vector(name("attn_norm.weight"), d));
    REPRISE_ASSIGN_OR_RETURN(w.wq, load_matrix(name("attn_q.weight"), d, qd));
    REPRISE_ASSIGN_OR_RETURN(w.wk, load_matrix(name("attn_k.weight"), d, kvd));
    REPRISE_ASSIGN_OR_RETURN(w.wv, load_matrix(name("attn_v.weight"), d, kvd));
    REPRISE_ASSIGN_OR_RETURN(w.wo, load_matrix(name("attn_output.weight"), qd, d));
    if (c.has_qkv_bias) {
      REPRISE_ASSIGN_OR_RETURN(w.bq, load_vector(name("attn_q.bias"), qd));
      REPRISE_ASSIGN_OR_RETURN(w.bk, load_vector(name("attn_k.bias"), kvd));
      REPRISE_ASSIGN_OR_RETURN(w.bv, load_vector(name("attn_v.bias"), kvd));
    }
    if (c.has_qk_norm) {
      REPRISE_ASSIGN_OR_RETURN(w.q_norm, load_vector(name("attn_q_norm.weight"), hd));
      REPRISE_ASSIGN_OR_RETURN(w.k_norm, load_vector(name("attn_k_norm.weight"), hd));
    }
    REPRISE_ASSIGN_OR_RETURN(w.ffn_norm, load_vector(name("ffn_norm.weight"), d));
    REPRISE_ASSIGN_OR_RETURN(w.w_gate, load_matrix(name("ffn_gate.weight"), d, ff));
    REPRISE_ASSIGN_OR_RETURN(w.w_up, load_matrix(name("ffn_up.weight"), d, ff));
    REPRISE_ASSIGN_OR_RETURN(w.w_down, load_matrix(name("ffn_down.weight"), ff, d));
  }
  return model;
}

ReferenceCache ReferenceModel::NewCache(int capacity_tokens) const {
  REPRISE_CHECK(capacity_tokens >= 0);
  ReferenceCache cache;
  cache.capacity_tokens = capacity_tokens;
  const size_t size = static_cast<size_t>(config_.num_layers) *
                      static_cast<size_t>(capacity_tokens) * static_cast<size_t>(config_.kv_dim());
  cache.k.assign(size, 0.0f);
  cache.v.assign(size, 0.0f);
  return cache;
}

Result<std::vector<float>> ReferenceModel::Forward(ReferenceCache& cache,
                                                   std::span<const int32_t> tokens) const {
  std::vector<int32_t> positions(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    positions[i] = cache.num_tokens + static_cast<int32_t>(i);
  }
  return ForwardAt(cache, tokens, positions);
}

Result<std::vector<float>> ReferenceModel::ForwardAt(ReferenceCache& cache,
                                                     std::span<const int32_t> tokens,
                                                     std::span<const int32_t> positions) const {
  // Everything is checked before the cache is touched, so an error leaves it unchanged.
  if (positions.size() != tokens.size()) {
    return InvalidArgumentError("got " + std::to_string(positions.size()) + " positions for " +
                                std::to_string(tokens.size()) + " tokens");
  }
  REPRISE_RETURN_IF_ERROR(CheckCache(cache, tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab_size) {
      return InvalidArgumentError("token id " + std::to_string(tokens[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab_size) + ")");
    }
    if (positions[i] < 0) {
      return InvalidArgumentError("position " + std::to_string(positions[i]) + " at index " +
                                  std::to_string(i) + " is negative");
    }
  }

  const size_t vocab = static_cast<size_t>(config_.vocab_size);
  std::vector<float> logits(tokens.size() * vocab);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int slot = cache.num_tokens;
    ForwardOne(cache, tokens[i], positions[i], slot,
               std::span<float>(logits).subspan(i * vocab, vocab));
    cache.num_tokens = slot + 1;
  }
  return logits;
}

Status ReferenceModel::CheckCache(const ReferenceCache& cache, size_t num_new_tokens) const {
  const size_t expected_size = static_cast<size_t>(config_.num_layers) *
                               static_cast<size_t>(std::max(cache.capacity_tokens, 0)) *
                               static_cast<size_t>(config_.kv_dim());
  if (cache.capacity_tokens < 0 || cache.num_tokens < 0 ||
      cache.num_tokens > cache.capacity_tokens || cache.k.size() != expected_size ||
      cache.v.size() != expected_size) {
    return InvalidArgumentError("the cache does not fit this model (make it with NewCache)");
  }
  const size_t room = static_cast<size_t>(cache.capacity_tokens - cache.num_tokens);
  if (num_new_tokens > room) {
    return InvalidArgumentError("cache capacity exceeded: " + std::to_string(cache.num_tokens) +
                                " + " + std::to_string(num_new_tokens) + " tokens > " +
                                std::to_string(cache.capacity_tokens));
  }
  return Status::Ok();
}

void ReferenceModel::ForwardOne(ReferenceCache& cache, int32_t token, int64_t position, int slot,
                                std::span<float> logits) const {
  const size_t dim = static_cast<size_t>(config_.embedding_dim);
  // The token's embedding row is the residual stream x.
  std::span<const float> embedding =
      std::span<const float>(token_embd_.values).subspan(static_cast<size_t>(token) * dim, dim);
  std::vector<float> x(embedding.begin(), embedding.end());

  for (int l = 0; l < config_.num_layers; ++l) {
    const LayerWeights& layer = layers_[static_cast<size_t>(l)];
    Attention(layer, l, cache, position, slot, x);
    FeedForward(layer, x);
  }

  RmsNorm(x, output_norm_, config_.rms_eps, x);
  MatVec(OutputMatrix().values, x, logits);
}

void ReferenceModel::Attention(const LayerWeights& layer, int layer_index, ReferenceCache& cache,
                               int64_t position, int slot, std::span<float> x) const {
  const ModelConfig& c = config_;
  const size_t head_dim = static_cast<size_t>(c.head_dim);

  std::vector<float> xn(x.size());
  RmsNorm(x, layer.attn_norm, c.rms_eps, xn);

  std::vector<float> q(static_cast<size_t>(c.q_dim()));
  std::vector<float> k(static_cast<size_t>(c.kv_dim()));
  std::vector<float> v(static_cast<size_t>(c.kv_dim()));
  MatVec(layer.wq.values, xn, q);
  MatVec(layer.wk.values, xn, k);
  MatVec(layer.wv.values, xn, v);
  if (c.has_qkv_bias) {
    AddInPlace(q, layer.bq);
    AddInPlace(k, layer.bk);
    AddInPlace(v, layer.bv);
  }

  // qwen3 normalises each head of Q and K before RoPE; then every head is rotated.
  for (int h = 0; h < c.num_heads; ++h) {
    std::span<float> qh = std::span<float>(q).subspan(static_cast<size_t>(h) * head_dim, head_dim);
    if (c.has_qk_norm) RmsNorm(qh, layer.q_norm, c.rms_eps, qh);
    ApplyRope(c, position, qh);
  }
  for (int h = 0; h < c.num_kv_heads; ++h) {
    std::span<float> kh = std::span<float>(k).subspan(static_cast<size_t>(h) * head_dim, head_dim);
    if (c.has_qk_norm) RmsNorm(kh, layer.k_norm, c.rms_eps, kh);
    ApplyRope(c, position, kh);
  }

  std::span<float> k_row = CacheRow(cache.k, c, cache.capacity_tokens, layer_index, slot);
  std::span<float> v_row = CacheRow(cache.v, c, cache.capacity_tokens, layer_index, slot);
  std::copy(k.begin(), k.end(), k_row.begin());
  std::copy(v.begin(), v.end(), v_row.begin());

  // Causal attention over slots [0, slot]; query head h reads kv head h / group_size.
  const int group_size = c.num_heads / c.num_kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  std::vector<float> attended(static_cast<size_t>(c.q_dim()));
  std::vector<float> scores(static_cast<size_t>(slot) + 1);
  for (int h = 0; h < c.num_heads; ++h) {
    const size_t q_offset = static_cast<size_t>(h) * head_dim;
    const size_t kv_offset = static_cast<size_t>(h / group_size) * head_dim;
    std::span<const float> qh = std::span<const float>(q).subspan(q_offset, head_dim);
    for (int j = 0; j <= slot; ++j) {
      std::span<const float> kj =
          CacheRow(cache.k, c, cache.capacity_tokens, layer_index, j).subspan(kv_offset, head_dim);
      scores[static_cast<size_t>(j)] = static_cast<float>(Dot(qh, kj) * scale);
    }
    SoftmaxInPlace(scores);
    std::vector<double> sum(head_dim, 0.0);
    for (int j = 0; j <= slot; ++j) {
      std::span<const float> vj =
          CacheRow(cache.v, c, cache.capacity_tokens, layer_index, j).subspan(kv_offset, head_dim);
      const double p = scores[static_cast<size_t>(j)];
      for (size_t e = 0; e < head_dim; ++e) sum[e] += p * vj[e];
    }
    for (size_t e = 0; e < head_dim; ++e) attended[q_offset + e] = static_cast<float>(sum[e]);
  }

  std::vector<float> projected(x.size());
  MatVec(layer.wo.values, attended, projected);
  AddInPlace(x, projected);
}

void ReferenceModel::FeedForward(const LayerWeights& layer, std::span<float> x) const {
  std::vector<float> xn(x.size());
  RmsNorm(x, layer.ffn_norm, config_.rms_eps, xn);

  const size_t ffn_dim = static_cast<size_t>(config_.ffn_dim);
  std::vector<float> gate(ffn_dim);
  std::vector<float> up(ffn_dim);
  MatVec(layer.w_gate.values, xn, gate);
  MatVec(layer.w_up.values, xn, up);
  std::vector<float> hidden(ffn_dim);
  for (size_t i = 0; i < ffn_dim; ++i) hidden[i] = Silu(gate[i]) * up[i];

  std::vector<float> down(x.size());
  MatVec(layer.w_down.values, hidden, down);
  AddInPlace(x, down);
}

}  // namespace reprise::model
