#include "model/test_model_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "base/random.h"
#include "kernels/quantize.h"

namespace reprise::model {
namespace {

// The bytes of `values` in `dtype`, and `values` replaced by what those bytes hold.
std::vector<uint8_t> Encode(DType dtype, int64_t row_length, std::vector<float>& values) {
  std::vector<uint8_t> bytes;
  if (dtype == DType::kF32) {
    bytes.resize(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else if (dtype == DType::kF16) {
    bytes.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h = F32ToF16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      values[i] = F16ToF32(h);
    }
  } else {
    REPRISE_CHECK(kernels::CanQuantize(dtype)) << DTypeName(dtype);
    const int64_t num_rows = static_cast<int64_t>(values.size()) / row_length;
    const size_t row_bytes = kernels::RowBytes(dtype, row_length);
    bytes.resize(row_bytes * static_cast<size_t>(num_rows));
    for (int64_t r = 0; r < num_rows; ++r) {
      float* row = values.data() + r * row_length;
      uint8_t* dst = bytes.data() + static_cast<size_t>(r) * row_bytes;
      kernels::QuantizeRow(dtype, row, dst, row_length);
      kernels::DequantizeRow(dtype, dst, row, row_length);
    }
  }
  return bytes;
}

class Builder {
 public:
  explicit Builder(const TestModelSpec& spec) : spec_(spec), random_(spec.seed) {}

  // A [out][in] matrix with entries ~ N(0, 1/in), so activations stay of order 1.
  void Matrix(const std::string& name, int in, int out) {
    std::vector<float> values(static_cast<size_t>(in) * static_cast<size_t>(out));
    const double scale = 1.0 / std::sqrt(static_cast<double>(in));
    for (float& v : values) v = static_cast<float>(random_.NextGaussian() * scale);
    Add(name, {static_cast<uint64_t>(in), static_cast<uint64_t>(out)}, spec_.matrix_dtype,
        std::move(values));
  }

  // A vector with entries center + N(0, spread^2).
  void Vector(const std::string& name, int size, double center, double spread) {
    std::vector<float> values(static_cast<size_t>(size));
    for (float& v : values) v = static_cast<float>(center + spread * random_.NextGaussian());
    Add(name, {static_cast<uint64_t>(size)}, DType::kF32, std::move(values));
  }

  void RopeFreqs(int size) {
    std::vector<float> values(static_cast<size_t>(size));
    for (float& v : values) v = 1.0f + 7.0f * random_.NextFloat();
    Add(tensor_names::kRopeFreqs, {static_cast<uint64_t>(size)}, DType::kF32, std::move(values));
  }

  std::vector<TestTensor> Take() { return std::move(tensors_); }

 private:
  void Add(const std::string& name, std::vector<uint64_t> dims, DType dtype,
           std::vector<float> values) {
    std::vector<uint8_t> bytes = Encode(dtype, static_cast<int64_t>(dims[0]), values);
    tensors_.push_back(
        TestTensor{name, std::move(dims), dtype, std::move(values), std::move(bytes)});
  }

  const TestModelSpec& spec_;
  Random random_;
  std::vector<TestTensor> tensors_;
};

}  // namespace

const TestTensor& TestModel::Get(std::string_view name) const {
  for (const TestTensor& t : tensors) {
    if (t.name == name) return t;
  }
  REPRISE_CHECK(false) << "no tensor " << name;
  return tensors.front();
}

TestTensor* TestModel::Find(std::string_view name) {
  for (TestTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool TestModel::Has(std::string_view name) const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [name](const TestTensor& t) { return t.name == name; });
}

void TestModel::Remove(std::string_view name) {
  auto it = std::find_if(tensors.begin(), tensors.end(),
                         [name](const TestTensor& t) { return t.name == name; });
  REPRISE_CHECK(it != tensors.end()) << "no tensor " << name;
  tensors.erase(it);
}

TestModel MakeTestModel(const TestModelSpec& spec) {
  const int d = spec.embedding_dim;
  const int hd = spec.resolved_head_dim();
  const int qd = spec.num_heads * hd;
  const int kvd = spec.num_kv_heads * hd;
  const int ff = spec.ffn_dim;
  Builder b(spec);
  // Embedding rows ~ N(0, 1): the first RMSNorm rescales them anyway.
  b.Matrix(tensor_names::kTokenEmbedding, d, spec.vocab_size);
  for (int l = 0; l < spec.num_layers; ++l) {
    auto name = [l](const char* suffix) { return tensor_names::Layer(l, suffix); };
    b.Vector(name("attn_norm.weight"), d, 1.0, 0.2);
    b.Matrix(name("attn_q.weight"), d, qd);
    b.Matrix(name("attn_k.weight"), d, kvd);
    b.Matrix(name("attn_v.weight"), d, kvd);
    if (spec.arch == Architecture::kQwen2) {
      b.Vector(name("attn_q.bias"), qd, 0.0, 0.5);
      b.Vector(name("attn_k.bias"), kvd, 0.0, 0.5);
      b.Vector(name("attn_v.bias"), kvd, 0.0, 0.5);
    }
    if (spec.arch == Architecture::kQwen3) {
      b.Vector(name("attn_q_norm.weight"), hd, 1.0, 0.3);
      b.Vector(name("attn_k_norm.weight"), hd, 1.0, 0.3);
    }
    b.Matrix(name("attn_output.weight"), qd, d);
    b.Vector(name("ffn_norm.weight"), d, 1.0, 0.2);
    b.Matrix(name("ffn_gate.weight"), d, ff);
    b.Matrix(name("ffn_up.weight"), d, ff);
    b.Matrix(name("ffn_down.weight"), ff, d);
  }
  b.Vector(tensor_names::kOutputNorm, d, 1.0, 0.2);
  if (!spec.tied_embeddings) b.Matrix(tensor_names::kOutput, d, spec.vocab_size);
  if (spec.has_rope_freqs) b.RopeFreqs(spec.resolved_rope_dims() / 2);
  return TestModel{spec, b.Take()};
}

void WriteTestModel(const TestModel& model, gguf::GgufWriter& writer,
                    std::span<const std::string> omit_keys) {
  const TestModelSpec& s = model.spec;
  const std::string arch(ArchitectureName(s.arch));
  auto keep = [&](const std::string& key) {
    return std::find(omit_keys.begin(), omit_keys.end(), key) == omit_keys.end();
  };
  auto set_u32 = [&](const std::string& key, int value) {
    if (keep(key)) writer.SetU32(key, static_cast<uint32_t>(value));
  };
  auto set_f32 = [&](const std::string& key, float value) {
    if (keep(key)) writer.SetF32(key, value);
  };
  if (keep("general.architecture")) writer.SetString("general.architecture", arch);
  if (keep("general.name")) writer.SetString("general.name", "test-" + arch);
  set_u32(arch + ".block_count", s.num_layers);
  set_u32(arch + ".embedding_length", s.embedding_dim);
  set_u32(arch + ".feed_forward_length", s.ffn_dim);
  set_u32(arch + ".attention.head_count", s.num_heads);
  set_u32(arch + ".attention.head_count_kv", s.num_kv_heads);
  if (s.head_dim > 0) {
    set_u32(arch + ".attention.key_length", s.head_dim);
    set_u32(arch + ".attention.value_length", s.head_dim);
  }
  set_u32(arch + ".context_length", s.context_length);
  set_f32(arch + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  set_f32(arch + ".rope.freq_base", s.rope_theta);
  if (s.rope_dims > 0) set_u32(arch + ".rope.dimension_count", s.rope_dims);

  for (const TestTensor& t : model.tensors) {
    std::vector<uint8_t> bytes = t.bytes;
    if (bytes.empty()) {
      std::vector<float> values = t.values;
      bytes = Encode(t.dtype, static_cast<int64_t>(t.dims[0]), values);
    }
    Status status = writer.AddTensor(t.name, t.dtype, t.dims, std::move(bytes));
    REPRISE_CHECK(status.ok()) << status.ToString();
  }
}

std::vector<uint8_t> TestModelBytes(const TestModel& model) {
  gguf::GgufWriter writer;
  WriteTestModel(model, writer);
  return writer.WriteToBuffer();
}

}  // namespace reprise::model
