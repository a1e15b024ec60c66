// NaiveTransformer: a second, independent forward pass for the model/ tests (test-only code).
//
// It computes from a TestModel's float weights, in double, straight from the formulas: layer
// by layer for all tokens at once, no KV cache, RoPE as an explicit rotation of each pair of
// dims. It shares no code with ReferenceModel, so agreement between the two checks both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/test_model_builder.h"

namespace reprise::model {

class NaiveTransformer {
 public:
  using Vec = std::vector<double>;

  // `model` must outlive this object.
  explicit NaiveTransformer(const TestModel& model) : m_(model), s_(model.spec) {}

  // The logits after each token: token t attends to tokens 0..t (sequence order) and is
  // rotated for positions[t]. Requires: positions.size() == tokens.size().
  std::vector<Vec> Logits(const std::vector<int32_t>& tokens,
                          const std::vector<int32_t>& positions) const;

 private:
  const std::vector<float>& Values(const std::string& name) const;
  Vec Row(const std::string& name, int row) const;
  // W x for W stored as GGUF dims {in, out}.
  Vec Mul(const std::string& name, const Vec& x) const;
  Vec Norm(const Vec& x, const std::string& weight_name) const;
  // qwen3: RMSNorm of the head at `offset`; then RoPE of its first rope_dims dims.
  void PrepareHead(Vec& all, int offset, const std::string& norm_name, int32_t position) const;

  const TestModel& m_;
  const TestModelSpec& s_;
};

}  // namespace reprise::model
