#include "engine/kv_arithmetic.h"

#include <xxhash.h>

#include <map>

namespace reprise::engine {
namespace {

// Feeds the values of one identity to XXH3, each with its size so that no two sequences of
// values hash alike by concatenation.
class Digest {
 public:
  Digest() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~Digest() { XXH3_freeState(state_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void Add(const void* data, size_t bytes) {
    const uint64_t size = bytes;
    XXH3_64bits_update(state_, &size, sizeof(size));
    XXH3_64bits_update(state_, data, bytes);
  }
  template <typename T>
  void AddValue(const T& value) {
    Add(&value, sizeof(value));
  }
  void AddString(std::string_view s) { Add(s.data(), s.size()); }
  uint64_t Value() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

void AddMatrix(const model::OwnedPackedMatrix* m, Digest& digest) {
  const uint8_t present = m != nullptr;
  digest.AddValue(present);
  if (m == nullptr) return;
  digest.AddValue(static_cast<uint8_t>(m->view.format));
  digest.AddValue(m->view.rows);
  digest.AddValue(m->view.cols);
  AddMatrix(m->shadow.get(), digest);
}

// Calls `f` on every matrix a layer multiplies by (null ones included: which are fused).
template <typename F>
void ForEachMatrix(const model::LayerWeights& lw, F f) {
  for (const auto* m :
       {&lw.qkv, &lw.q, &lw.k, &lw.v, &lw.output, &lw.gate_up, &lw.gate, &lw.up, &lw.down}) {
    f(m->get());
  }
}

}  // namespace

uint64_t KvArithmeticFingerprint(const LoadedModel& model, const model::PackedWeights& weights,
                                 const kernels::KernelSet& kernels) {
  Digest digest;
  digest.AddValue(model.fingerprint());
  digest.AddValue(kKvArithmeticVersion);
  digest.AddString(kernels.name);
  const int layers = weights.config().num_layers;
  for (int l = 0; l < layers; ++l) {
    const model::LayerWeights& lw = weights.layer(l);
    ForEachMatrix(lw, [&](const model::OwnedPackedMatrix* m) { AddMatrix(m, digest); });
    for (const model::ActivationQuant& quant : lw.activation) {
      digest.AddValue(quant.scale);
      digest.Add(quant.outliers.data(), quant.outliers.size() * sizeof(int32_t));
    }
  }
  AddMatrix(&weights.output(), digest);
  const uint64_t value = digest.Value();
  return value != 0 ? value : 1;  // 0 means "no model" to the store
}

std::string DescribeKvArithmetic(const model::PackedWeights& weights,
                                 const kernels::KernelSet& kernels) {
  std::map<std::string, int> formats;
  bool per_tensor = false;
  bool shadow = false;
  for (int l = 0; l < weights.config().num_layers; ++l) {
    const model::LayerWeights& lw = weights.layer(l);
    ForEachMatrix(lw, [&](const model::OwnedPackedMatrix* m) {
      if (m == nullptr) return;
      ++formats[kernels::PackedFormatName(m->view.format)];
      shadow |= m->shadow != nullptr;
    });
    for (const model::ActivationQuant& quant : lw.activation) per_tensor |= quant.scale > 0;
  }
  std::string out = std::string("kernels ") + kernels.name + ", int8 " +
                    (shadow       ? "shadow"
                     : per_tensor ? "per-tensor"
                                  : "per-block") +
                    ", weights";
  for (const auto& [name, count] : formats) out += " " + name + " (" + std::to_string(count) + ")";
  out += ", output " + std::string(kernels::PackedFormatName(weights.output().view.format));
  return out + ", arithmetic v" + std::to_string(kKvArithmeticVersion);
}

}  // namespace reprise::engine
