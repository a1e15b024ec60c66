// PackedWeights: a model's weights, packed once at load into the layouts the matrix-multiply
// kernels read, and shared by every compiled graph.
//
// Each weight matrix is packed by kernels::PackMatrixRows (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K regrouped
// bit for bit, Q3_K held exactly as Q6_K, F16/F32 kept, other types requantized to Q8_0). Where the
// formats allow, Q|K|V are packed as one matrix and gate|up as another, so that each is one
// multiply. Norm weights, biases and RoPE frequencies become float vectors. The token embedding
// stays in the mapped file (rows are dequantized on lookup) unless it is tied to the output
// projection, whose packed copy then serves lookups too. After a tensor is packed its file pages
// are released, so resident memory stays near the file size. The GgufFile must outlive this object
// (embedding lookups read it).
//
// Immutable after Create(); thread-safe for reading.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/packed_matrix.h"
#include "model/model_config.h"
#include "model/static_int8.h"

namespace reprise::model {

struct PackOptions {
  // Pack every matrix into this format instead of the one its type maps to (for tests and
  // experiments, e.g. an F16 model run through the Q8_0 kernels).
  std::optional<kernels::PackedFormat> force_format;
  // Unless forced, Q6_K and Q3_K layer matrices go to this format instead of
  // ChoosePackedFormat's (Q6_Kx8); CompiledModel passes its kernel set's
  // KernelSet::q6_k_format. The output projection, which multiplies one row per decode step,
  // keeps Q6_Kx8.
  std::optional<kernels::PackedFormat> q6_k_format;
  // NPU-style static INT8 (static_int8.h): unless the scheme is kPerBlock, every layer matrix
  // is repacked as kI8x8 after packing, with the per-tensor scales (and, for the shadow
  // scheme, outlier channels) planned from `activation_calibration`, which is then required.
  StaticInt8Options static_int8;
  std::shared_ptr<const ActivationCalibration> activation_calibration;
};

// A packed matrix with its own memory.
class OwnedPackedMatrix {
 public:
  OwnedPackedMatrix() = default;
  kernels::PackedMatrix view;  // data points into memory_
  std::unique_ptr<uint8_t, void (*)(void*)> memory{nullptr, nullptr};
  size_t size_bytes = 0;
  // Shadow outlier execution: the float weights of the input's outlier channels
  // ([view.rows x outliers], kF32x8; those columns are zero in `view`); null without.
  std::unique_ptr<OwnedPackedMatrix> shadow;
};

// An uninitialised packed matrix of `format`, 64-byte aligned. Errors: ResourceExhausted.
Result<std::unique_ptr<OwnedPackedMatrix>> AllocatePackedMatrix(kernels::PackedFormat format,
                                                                int64_t rows, int64_t cols);

struct LayerWeights {
  std::vector<float> attn_norm;  // [dim]
  std::vector<float> ffn_norm;   // [dim]
  // Q|K|V fused when `qkv` is set; otherwise q, k and v.
  std::unique_ptr<OwnedPackedMatrix> qkv, q, k, v;
  std::unique_ptr<OwnedPackedMatrix> output;  // attn_output [dim x q_dim]
  // gate|up fused when `gate_up` is set; otherwise gate and up.
  std::unique_ptr<OwnedPackedMatrix> gate_up, gate, up;
  std::unique_ptr<OwnedPackedMatrix> down;    // [dim x ffn]
  std::vector<float> q_bias, k_bias, v_bias;  // qwen2, else empty
  std::vector<float> q_norm, k_norm;          // qwen3, else empty
  // How each activation point's matmul input is quantized ([ActivationPoint]); scale 0 (the
  // default) = per block at run time, as the packed format wants.
  ActivationQuant activation[kActivationPointsPerLayer];
  const ActivationQuant& quant(ActivationPoint point) const {
    return activation[static_cast<int>(point)];
  }
};

class PackedWeights {
 public:
  // Errors: Unimplemented (a tensor type that cannot be packed), Corrupt (among others: a
  // NaN or infinite weight, see weight_check.h), ResourceExhausted; InvalidArgument for a
  // static INT8 scheme without a calibration of this model's shape.
  static Result<std::unique_ptr<PackedWeights>> Create(const gguf::GgufFile& file,
                                                       const ModelConfig& config, ThreadPool& pool,
                                                       const PackOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const LayerWeights& layer(int l) const { return layers_[static_cast<size_t>(l)]; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  const OwnedPackedMatrix& output() const { return *output_; }
  const std::vector<float>& rope_inv_freq() const { return rope_inv_freq_; }

  // Tied embeddings: the packed output matrix doubles as the table (no second copy).
  const kernels::PackedMatrix* packed_embedding() const { return tied_ ? &output_->view : nullptr; }
  // Otherwise the embedding table, read in place from the model file.
  const uint8_t* embedding_table() const { return embedding_->data.data(); }
  DType embedding_dtype() const { return embedding_->dtype; }
  int64_t embedding_row_bytes() const;

  // Bytes of packed matrices and float vectors held (not counting the mapped file).
  int64_t packed_bytes() const { return packed_bytes_; }

 private:
  PackedWeights() = default;
  ModelConfig config_;
  std::vector<LayerWeights> layers_;
  std::vector<float> output_norm_;
  std::unique_ptr<OwnedPackedMatrix> output_;
  std::vector<float> rope_inv_freq_;
  const gguf::TensorInfo* embedding_ = nullptr;
  bool tied_ = false;
  int64_t packed_bytes_ = 0;
};

}  // namespace reprise::model
