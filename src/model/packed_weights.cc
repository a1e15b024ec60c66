#include "model/packed_weights.h"

#include <cstdlib>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/quantize.h"
#include "model/weight_check.h"

namespace reprise::model {
namespace {

using tensor_names::Layer;

const gguf::TensorInfo* Find(const gguf::GgufFile& file, const std::string& name) {
  return file.FindTensor(name);
}

Result<std::vector<float>> ReadVector(const gguf::GgufFile& file, const std::string& name) {
  const gguf::TensorInfo* t = Find(file, name);
  if (t == nullptr) return CorruptError("tensor '" + name + "' is missing");
  if (!kernels::CanDequantize(t->dtype)) {
    return UnimplementedError("tensor '" + name + "' has type " + std::string(DTypeName(t->dtype)) +
                              ", which cannot be read");
  }
  std::vector<float> out(t->num_elements);
  kernels::DequantizeRow(t->dtype, t->data.data(), out.data(),
                         static_cast<int64_t>(t->num_elements));
  return out;
}

kernels::PackedFormat FormatFor(DType dtype, const PackOptions& options) {
  if (options.force_format) return *options.force_format;
  if (kernels::ChoosePackedFormat(dtype) == kernels::PackedFormat::kQ6_Kx8 && options.q6_k_format) {
    return *options.q6_k_format;  // Q6_K and Q3_K
  }
  return kernels::ChoosePackedFormat(dtype);
}

// The output projection's format. It multiplies one row per call — the last position's
// logits; a decode batch's few rows — except in graphs built for every position's logits, so
// it is chosen for decode: Q6_K keeps its own Q6_Kx8 on every set (6.56 bits per weight
// streamed per token instead of Q8_0x8's 8.5; the sets that prefer Q8_0x8 for Q6_K do so for
// prompts' many rows).
kernels::PackedFormat OutputFormat(DType dtype, const PackOptions& options) {
  if (options.force_format) return *options.force_format;
  return kernels::ChoosePackedFormat(dtype);
}

// Packs the row-wise concatenation of `parts` (GGUF matrices of equal row length) into one
// packed matrix. Every part but the last has a multiple of kPackRows rows, so that no group
// straddles two parts.
Result<std::unique_ptr<OwnedPackedMatrix>> Pack(const gguf::GgufFile& file,
                                                const std::vector<const gguf::TensorInfo*>& parts,
                                                kernels::PackedFormat format, ThreadPool& pool,
                                                bool release_pages) {
  const int64_t cols = static_cast<int64_t>(parts[0]->dims[0]);
  int64_t rows = 0;
  for (const gguf::TensorInfo* t : parts) {
    if (!kernels::CanPack(t->dtype)) {
      return UnimplementedError("tensor '" + std::string(t->name) + "' has type " +
                                std::string(DTypeName(t->dtype)) + ", which cannot be packed");
    }
    if (cols % kernels::PackedColumnMultiple(format) != 0) {
      return UnimplementedError("tensor '" + std::string(t->name) + "': rows of " +
                                std::to_string(cols) + " do not fit the " +
                                kernels::PackedFormatName(format) + " format");
    }
    rows += static_cast<int64_t>(t->num_rows());
  }
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<OwnedPackedMatrix> owned,
                           AllocatePackedMatrix(format, rows, cols));
  const size_t group_bytes = kernels::PackedGroupBytes(format, cols);
  int64_t row_offset = 0;
  for (const gguf::TensorInfo* t : parts) {
    const int64_t part_rows = static_cast<int64_t>(t->num_rows());
    uint8_t* dst =
        owned->memory.get() + static_cast<size_t>(row_offset / kernels::kPackRows) * group_bytes;
    const size_t src_row_bytes = kernels::RowBytes(t->dtype, cols);
    // Slabs of rows: each slab's file pages are released as soon as it is packed, so that
    // the packed copy and the file are never both resident in full.
    constexpr int64_t kSlabRows = 1024;
    for (int64_t slab = 0; slab < part_rows; slab += kSlabRows) {
      const int64_t slab_end = std::min(part_rows, slab + kSlabRows);
      const int64_t first_group = slab / kernels::kPackRows;
      const int64_t end_group = (slab_end + kernels::kPackRows - 1) / kernels::kPackRows;
      pool.ParallelFor(end_group - first_group, 1, [&](int64_t g0, int64_t g1) {
        kernels::PackMatrixRows(format, t->dtype, t->data.data(), part_rows, cols,
                                (first_group + g0) * kernels::kPackRows,
                                std::min(part_rows, (first_group + g1) * kernels::kPackRows), dst);
      });
      if (release_pages && file.mapped_file() != nullptr) {
        file.mapped_file()->AdviseDontNeed(
            t->offset_bytes + static_cast<uint64_t>(slab) * src_row_bytes,
            static_cast<size_t>(slab_end - slab) * src_row_bytes);
      }
    }
    row_offset += part_rows;
  }
  return owned;
}

// Packs `names` fused into one matrix when their formats agree and the row counts allow it;
// otherwise each alone. Exactly one of `fused` or `separate` is filled.
Status PackGroup(const gguf::GgufFile& file, const std::vector<std::string>& names,
                 const PackOptions& options, ThreadPool& pool,
                 std::unique_ptr<OwnedPackedMatrix>& fused,
                 std::vector<std::unique_ptr<OwnedPackedMatrix>*> separate) {
  std::vector<const gguf::TensorInfo*> parts;
  for (const std::string& name : names) {
    const gguf::TensorInfo* t = Find(file, name);
    if (t == nullptr) return CorruptError("tensor '" + name + "' is missing");
    parts.push_back(t);
  }
  const kernels::PackedFormat format = FormatFor(parts[0]->dtype, options);
  bool can_fuse = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (FormatFor(parts[i]->dtype, options) != format) can_fuse = false;
    if (i + 1 < parts.size() && parts[i]->num_rows() % kernels::kPackRows != 0) can_fuse = false;
  }
  if (can_fuse) {
    REPRISE_ASSIGN_OR_RETURN(fused, Pack(file, parts, format, pool, true));
    return Status::Ok();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    REPRISE_ASSIGN_OR_RETURN(
        *separate[i], Pack(file, {parts[i]}, FormatFor(parts[i]->dtype, options), pool, true));
  }
  return Status::Ok();
}

// The options to pack the layer matrices `names` with. Static INT8 quantizes each of them per
// row from its values (RepackStaticInt8): a source that packing would requantize (a K-quant to
// Q8_0) is then packed as F32 instead, exactly, so that it is quantized once rather than twice.
// Matrices the scheme will not repack (columns that do not fit kI8x8) keep their format.
PackOptions LayerPackOptions(const gguf::GgufFile& file, const std::vector<std::string>& names,
                             const PackOptions& options) {
  if (options.static_int8.scheme == Int8Scheme::kPerBlock || options.force_format) return options;
  bool requantized = false;
  for (const std::string& name : names) {
    const gguf::TensorInfo* t = Find(file, name);
    if (t == nullptr) return options;  // PackGroup says what is missing
    if (t->dims[0] % kernels::PackedColumnMultiple(kernels::PackedFormat::kI8x8) != 0) {
      return options;
    }
    requantized = requantized || (FormatFor(t->dtype, options) == kernels::PackedFormat::kQ8_0x8 &&
                                  t->dtype != DType::kQ8_0);
  }
  if (!requantized) return options;
  PackOptions exact = options;
  exact.force_format = kernels::PackedFormat::kF32x8;
  return exact;
}

int64_t Bytes(const std::unique_ptr<OwnedPackedMatrix>& m) {
  if (!m) return 0;
  return static_cast<int64_t>(m->size_bytes) + (m->shadow ? Bytes(m->shadow) : 0);
}

// Repacks `m` as kI8x8 with the columns `outliers` zeroed and, when there are any, gives it
// their float weights as its shadow matrix.
Status RepackStaticInt8(OwnedPackedMatrix& m, const std::vector<int32_t>& outliers,
                        ThreadPool& pool) {
  const int64_t rows = m.view.rows, cols = m.view.cols;
  std::vector<float> values(static_cast<size_t>(rows * cols));
  pool.ParallelFor(rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::UnpackRow(m.view, r, values.data() + r * cols);
  });
  const auto num_outliers = static_cast<int64_t>(outliers.size());
  std::unique_ptr<OwnedPackedMatrix> shadow;
  if (num_outliers > 0) {
    std::vector<float> columns(static_cast<size_t>(rows * num_outliers));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < num_outliers; ++j) {
        float& w = values[static_cast<size_t>(r * cols + outliers[static_cast<size_t>(j)])];
        columns[static_cast<size_t>(r * num_outliers + j)] = w;
        w = 0.0f;
      }
    }
    REPRISE_ASSIGN_OR_RETURN(
        shadow, AllocatePackedMatrix(kernels::PackedFormat::kF32x8, rows, num_outliers));
    kernels::PackMatrixRows(kernels::PackedFormat::kF32x8, DType::kF32,
                            reinterpret_cast<const uint8_t*>(columns.data()), rows, num_outliers, 0,
                            rows, shadow->memory.get());
  }
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<OwnedPackedMatrix> packed,
                           AllocatePackedMatrix(kernels::PackedFormat::kI8x8, rows, cols));
  const auto* src = reinterpret_cast<const uint8_t*>(values.data());
  pool.ParallelFor(packed->view.num_groups(), 1, [&](int64_t g0, int64_t g1) {
    kernels::PackMatrixRows(kernels::PackedFormat::kI8x8, DType::kF32, src, rows, cols,
                            g0 * kernels::kPackRows, std::min(rows, g1 * kernels::kPackRows),
                            packed->memory.get());
  });
  packed->shadow = std::move(shadow);
  m = std::move(*packed);
  return Status::Ok();
}

// Static INT8 for one layer: each activation point whose matrices all take kI8x8 (columns a
// multiple of 4) gets its planned scale and outliers and its matrices are repacked; a point
// that cannot stays per block.
Status ApplyStaticInt8(LayerWeights& lw, const std::vector<ActivationQuant>& plan, int layer,
                       ThreadPool& pool) {
  const std::pair<ActivationPoint, std::vector<std::unique_ptr<OwnedPackedMatrix>*>> points[] = {
      {ActivationPoint::kAttnIn, {&lw.qkv, &lw.q, &lw.k, &lw.v}},
      {ActivationPoint::kAttnOut, {&lw.output}},
      {ActivationPoint::kFfnIn, {&lw.gate_up, &lw.gate, &lw.up}},
      {ActivationPoint::kFfnHidden, {&lw.down}},
  };
  for (const auto& [point, matrices] : points) {
    const ActivationQuant& quant = plan[static_cast<size_t>(ActivationPointIndex(layer, point))];
    bool fits = true;
    for (const auto* m : matrices) {
      if (*m &&
          (*m)->view.cols % kernels::PackedColumnMultiple(kernels::PackedFormat::kI8x8) != 0) {
        fits = false;
      }
    }
    if (!fits) continue;
    for (const auto* m : matrices) {
      if (*m) REPRISE_RETURN_IF_ERROR(RepackStaticInt8(**m, quant.outliers, pool));
    }
    lw.activation[static_cast<int>(point)] = quant;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<OwnedPackedMatrix>> AllocatePackedMatrix(kernels::PackedFormat format,
                                                                int64_t rows, int64_t cols) {
  auto owned = std::make_unique<OwnedPackedMatrix>();
  owned->size_bytes = kernels::PackedMatrixBytes(format, rows, cols);
  const size_t allocated = (owned->size_bytes + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, std::max<size_t>(allocated, 64));
  if (memory == nullptr) {
    return ResourceExhaustedError("cannot allocate " + std::to_string(allocated) +
                                  " bytes for packed weights");
  }
  owned->memory =
      std::unique_ptr<uint8_t, void (*)(void*)>(static_cast<uint8_t*>(memory), std::free);
  owned->view = kernels::PackedMatrix{format, rows, cols, owned->memory.get()};
  return owned;
}

int64_t PackedWeights::embedding_row_bytes() const {
  return static_cast<int64_t>(
      kernels::RowBytes(embedding_->dtype, static_cast<int64_t>(embedding_->dims[0])));
}

Result<std::unique_ptr<PackedWeights>> PackedWeights::Create(const gguf::GgufFile& file,
                                                             const ModelConfig& config,
                                                             ThreadPool& pool,
                                                             const PackOptions& options) {
  // Before anything is packed: a NaN/Inf weight would make every logit NaN.
  REPRISE_RETURN_IF_ERROR(CheckWeightsFinite(file));
  std::vector<ActivationQuant> static_int8_plan;
  if (options.static_int8.scheme != Int8Scheme::kPerBlock) {
    const ActivationCalibration* calibration = options.activation_calibration.get();
    if (calibration == nullptr) {
      return InvalidArgumentError(std::string("the ") + Int8SchemeName(options.static_int8.scheme) +
                                  " int8 scheme needs an activation calibration");
    }
    const size_t points = static_cast<size_t>(config.num_layers) * kActivationPointsPerLayer;
    bool shape_ok = calibration->channel_absmax.size() == points;
    for (int l = 0; shape_ok && l < config.num_layers; ++l) {
      const int64_t dims[] = {config.embedding_dim, config.q_dim(), config.embedding_dim,
                              config.ffn_dim};
      for (int p = 0; p < kActivationPointsPerLayer; ++p) {
        shape_ok &=
            static_cast<int64_t>(
                calibration->channel_absmax[static_cast<size_t>(l * kActivationPointsPerLayer + p)]
                    .size()) == dims[p];
      }
    }
    if (!shape_ok) {
      return InvalidArgumentError("the activation calibration is not of this model's shape");
    }
    static_int8_plan = PlanStaticInt8(*calibration, options.static_int8);
  }
  std::unique_ptr<PackedWeights> w(new PackedWeights());
  w->config_ = config;
  w->embedding_ = Find(file, tensor_names::kTokenEmbedding);
  if (w->embedding_ == nullptr) return CorruptError("tensor 'token_embd.weight' is missing");
  if (!kernels::CanDequantize(w->embedding_->dtype)) {
    return UnimplementedError("token_embd.weight has type " +
                              std::string(DTypeName(w->embedding_->dtype)) +
                              ", which cannot be read");
  }
  w->layers_.resize(static_cast<size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    LayerWeights& lw = w->layers_[static_cast<size_t>(l)];
    REPRISE_ASSIGN_OR_RETURN(lw.attn_norm, ReadVector(file, Layer(l, "attn_norm.weight")));
    REPRISE_ASSIGN_OR_RETURN(lw.ffn_norm, ReadVector(file, Layer(l, "ffn_norm.weight")));
    const std::vector<std::string> qkv = {Layer(l, "attn_q.weight"), Layer(l, "attn_k.weight"),
                                          Layer(l, "attn_v.weight")};
    const std::vector<std::string> output = {Layer(l, "attn_output.weight")};
    const std::vector<std::string> gate_up = {Layer(l, "ffn_gate.weight"),
                                              Layer(l, "ffn_up.weight")};
    const std::vector<std::string> down = {Layer(l, "ffn_down.weight")};
    REPRISE_RETURN_IF_ERROR(PackGroup(file, qkv, LayerPackOptions(file, qkv, options), pool, lw.qkv,
                                      {&lw.q, &lw.k, &lw.v}));
    REPRISE_RETURN_IF_ERROR(PackGroup(file, output, LayerPackOptions(file, output, options), pool,
                                      lw.output, {&lw.output}));
    REPRISE_RETURN_IF_ERROR(PackGroup(file, gate_up, LayerPackOptions(file, gate_up, options), pool,
                                      lw.gate_up, {&lw.gate, &lw.up}));
    REPRISE_RETURN_IF_ERROR(
        PackGroup(file, down, LayerPackOptions(file, down, options), pool, lw.down, {&lw.down}));
    if (config.has_qkv_bias) {
      REPRISE_ASSIGN_OR_RETURN(lw.q_bias, ReadVector(file, Layer(l, "attn_q.bias")));
      REPRISE_ASSIGN_OR_RETURN(lw.k_bias, ReadVector(file, Layer(l, "attn_k.bias")));
      REPRISE_ASSIGN_OR_RETURN(lw.v_bias, ReadVector(file, Layer(l, "attn_v.bias")));
    }
    if (config.has_qk_norm) {
      REPRISE_ASSIGN_OR_RETURN(lw.q_norm, ReadVector(file, Layer(l, "attn_q_norm.weight")));
      REPRISE_ASSIGN_OR_RETURN(lw.k_norm, ReadVector(file, Layer(l, "attn_k_norm.weight")));
    }
    if (!static_int8_plan.empty()) {
      REPRISE_RETURN_IF_ERROR(ApplyStaticInt8(lw, static_int8_plan, l, pool));
    }
    for (const auto* m :
         {&lw.qkv, &lw.q, &lw.k, &lw.v, &lw.output, &lw.gate_up, &lw.gate, &lw.up, &lw.down}) {
      w->packed_bytes_ += Bytes(*m);
    }
  }
  REPRISE_ASSIGN_OR_RETURN(w->output_norm_, ReadVector(file, tensor_names::kOutputNorm));
  const gguf::TensorInfo* output = Find(file, tensor_names::kOutput);
  const bool tied = output == nullptr;
  w->tied_ = tied;
  if (tied) output = w->embedding_;
  REPRISE_ASSIGN_OR_RETURN(w->output_, Pack(file, {output}, OutputFormat(output->dtype, options),
                                            pool, /*release_pages=*/true));
  w->packed_bytes_ += Bytes(w->output_);
  if (!tied && file.mapped_file() != nullptr) {
    // Lookups touch scattered rows: no read-ahead around them.
    file.mapped_file()->AdviseRandom(w->embedding_->offset_bytes, w->embedding_->size_bytes);
  }
  w->rope_inv_freq_.resize(static_cast<size_t>(config.rope_dims / 2));
  kernels::RopeInverseFrequencies(
      config.rope_theta, config.rope_dims,
      config.rope_freq_factors.empty() ? nullptr : config.rope_freq_factors.data(), 1.0f,
      w->rope_inv_freq_.data());
  return w;
}

}  // namespace reprise::model
