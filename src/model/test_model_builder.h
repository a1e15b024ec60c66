// Small synthetic transformer models for the model/ tests (test-only code).
//
// MakeTestModel draws random weights from a fixed seed for a TestModelSpec (llama, qwen2 or
// qwen3; any head layout) and keeps them as floats, rounded to the stored type, so that a
// test can both write the model to GGUF (WriteTestModel) and compute with the same values
// independently of ReferenceModel. Tests may edit the tensor list or the metadata before
// writing to produce broken files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "gguf/gguf_writer.h"
#include "model/model_config.h"

namespace reprise::model {

struct TestModelSpec {
  Architecture arch = Architecture::kLlama;
  int num_layers = 2;
  int embedding_dim = 16;
  int ffn_dim = 24;
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_dim = 0;   // 0: embedding_dim / num_heads, and no key_length key is written
  int rope_dims = 0;  // 0: head_dim, and no rope.dimension_count key is written
  int vocab_size = 40;
  int context_length = 256;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  bool has_rope_freqs = false;       // writes rope_freqs.weight with factors in [1, 8)
  bool tied_embeddings = false;      // omits output.weight
  DType matrix_dtype = DType::kF32;  // type of the 2-D weights; 1-D ones are always F32
  uint64_t seed = 1;

  int resolved_head_dim() const { return head_dim > 0 ? head_dim : embedding_dim / num_heads; }
  int resolved_rope_dims() const { return rope_dims > 0 ? rope_dims : resolved_head_dim(); }
};

struct TestTensor {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF order: dims[0] = row length ("in")
  DType dtype = DType::kF32;
  std::vector<float> values;  // row-major, exactly the values stored (after rounding)
  // The stored encoding of `values`; a test that edits values or dims clears it, and
  // WriteTestModel then encodes `values` anew.
  std::vector<uint8_t> bytes;
};

struct TestModel {
  TestModelSpec spec;
  std::vector<TestTensor> tensors;

  // Requires: the tensor exists.
  const TestTensor& Get(std::string_view name) const;
  // nullptr when absent.
  TestTensor* Find(std::string_view name);
  bool Has(std::string_view name) const;
  // Requires: the tensor exists.
  void Remove(std::string_view name);
};

TestModel MakeTestModel(const TestModelSpec& spec);

// Sets the spec's metadata on `writer` (except the keys in `omit_keys`) and adds every tensor.
void WriteTestModel(const TestModel& model, gguf::GgufWriter& writer,
                    std::span<const std::string> omit_keys = {});

// The GGUF bytes of `model`.
std::vector<uint8_t> TestModelBytes(const TestModel& model);

}  // namespace reprise::model
