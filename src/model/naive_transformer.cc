#include "model/naive_transformer.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace reprise::model {
namespace {

void Add(NaiveTransformer::Vec& x, const NaiveTransformer::Vec& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}
void Add(NaiveTransformer::Vec& x, const std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

}  // namespace

std::vector<NaiveTransformer::Vec> NaiveTransformer::Logits(
    const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions) const {
  REPRISE_CHECK_EQ(tokens.size(), positions.size());
  const size_t n = tokens.size();
  const int hd = s_.resolved_head_dim();
  const int group = s_.num_heads / s_.num_kv_heads;
  std::vector<Vec> x(n);
  for (size_t t = 0; t < n; ++t) x[t] = Row(tensor_names::kTokenEmbedding, tokens[t]);
  for (int l = 0; l < s_.num_layers; ++l) {
    auto name = [l](const char* suffix) { return tensor_names::Layer(l, suffix); };
    std::vector<Vec> q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
      const Vec h = Norm(x[t], name("attn_norm.weight"));
      q[t] = Mul(name("attn_q.weight"), h);
      k[t] = Mul(name("attn_k.weight"), h);
      v[t] = Mul(name("attn_v.weight"), h);
      if (s_.arch == Architecture::kQwen2) {
        Add(q[t], Values(name("attn_q.bias")));
        Add(k[t], Values(name("attn_k.bias")));
        Add(v[t], Values(name("attn_v.bias")));
      }
      for (int head = 0; head < s_.num_heads; ++head) {
        PrepareHead(q[t], head * hd, name("attn_q_norm.weight"), positions[t]);
      }
      for (int head = 0; head < s_.num_kv_heads; ++head) {
        PrepareHead(k[t], head * hd, name("attn_k_norm.weight"), positions[t]);
      }
    }
    for (size_t t = 0; t < n; ++t) {
      Vec attended(static_cast<size_t>(s_.num_heads * hd), 0.0);
      for (int head = 0; head < s_.num_heads; ++head) {
        const size_t qo = static_cast<size_t>(head * hd);
        const size_t ko = static_cast<size_t>((head / group) * hd);
        Vec scores(t + 1);
        double max_score = -1e300;
        for (size_t u = 0; u <= t; ++u) {
          double dot = 0.0;
          for (int e = 0; e < hd; ++e) dot += q[t][qo + e] * k[u][ko + e];
          scores[u] = dot / std::sqrt(static_cast<double>(hd));
          max_score = std::max(max_score, scores[u]);
        }
        double total = 0.0;
        for (double& sc : scores) total += (sc = std::exp(sc - max_score));
        for (size_t u = 0; u <= t; ++u) {
          for (int e = 0; e < hd; ++e) attended[qo + e] += scores[u] / total * v[u][ko + e];
        }
      }
      Add(x[t], Mul(name("attn_output.weight"), attended));
    }
    for (size_t t = 0; t < n; ++t) {
      const Vec h = Norm(x[t], name("ffn_norm.weight"));
      const Vec gate = Mul(name("ffn_gate.weight"), h);
      const Vec up = Mul(name("ffn_up.weight"), h);
      Vec hidden(gate.size());
      for (size_t i = 0; i < gate.size(); ++i) {
        hidden[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      }
      Add(x[t], Mul(name("ffn_down.weight"), hidden));
    }
  }
  const std::string out_name =
      s_.tied_embeddings ? tensor_names::kTokenEmbedding : tensor_names::kOutput;
  std::vector<Vec> logits(n);
  for (size_t t = 0; t < n; ++t) logits[t] = Mul(out_name, Norm(x[t], tensor_names::kOutputNorm));
  return logits;
}

const std::vector<float>& NaiveTransformer::Values(const std::string& name) const {
  return m_.Get(name).values;
}

NaiveTransformer::Vec NaiveTransformer::Row(const std::string& name, int row) const {
  const TestTensor& t = m_.Get(name);
  const size_t in = t.dims[0];
  return Vec(t.values.begin() + static_cast<ptrdiff_t>(in * static_cast<size_t>(row)),
             t.values.begin() + static_cast<ptrdiff_t>(in * static_cast<size_t>(row + 1)));
}

NaiveTransformer::Vec NaiveTransformer::Mul(const std::string& name, const Vec& x) const {
  const TestTensor& t = m_.Get(name);
  REPRISE_CHECK_EQ(t.dims[0], x.size()) << name;
  Vec out(t.dims[1], 0.0);
  for (size_t r = 0; r < out.size(); ++r) {
    for (size_t c = 0; c < x.size(); ++c) out[r] += t.values[r * x.size() + c] * x[c];
  }
  return out;
}

NaiveTransformer::Vec NaiveTransformer::Norm(const Vec& x, const std::string& weight_name) const {
  const std::vector<float>& w = Values(weight_name);
  double ss = 0.0;
  for (double e : x) ss += e * e;
  const double r = std::sqrt(ss / static_cast<double>(x.size()) + s_.rms_eps);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] / r * w[i];
  return out;
}

void NaiveTransformer::PrepareHead(Vec& all, int offset, const std::string& norm_name,
                                   int32_t position) const {
  const int hd = s_.resolved_head_dim();
  Vec head(all.begin() + offset, all.begin() + offset + hd);
  if (s_.arch == Architecture::kQwen3) head = Norm(head, norm_name);
  const int rd = s_.resolved_rope_dims();
  for (int i = 0; i < rd / 2; ++i) {
    // Interleaved (llama GGUF) rotates dims (2i, 2i+1); neox (qwen) rotates (i, i + rd/2).
    const bool neox = s_.arch != Architecture::kLlama;
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + rd / 2 : 2 * i + 1;
    double frequency = 1.0 / std::pow(static_cast<double>(s_.rope_theta), 2.0 * i / rd);
    if (s_.has_rope_freqs) frequency /= Values(tensor_names::kRopeFreqs)[static_cast<size_t>(i)];
    const double angle = position * frequency;
    const double xa = head[a], xb = head[b];
    head[a] = std::cos(angle) * xa - std::sin(angle) * xb;
    head[b] = std::sin(angle) * xa + std::cos(angle) * xb;
  }
  std::copy(head.begin(), head.end(), all.begin() + offset);
}

}  // namespace reprise::model
