// NPU-style static INT8 (docs/design.md §9, from llm.npu): what an NPU's integer matmul allows, as
// a selectable alternative to the CPU's per-block activation quantization.
//
// An NPU multiplies int8 activations by int8 weights with one activation scale per tensor,
// fixed when the graph is compiled, and accumulates each output in int32. The scale comes
// from a calibration: the largest |activation| of each input channel over a text
// (ActivationCalibration, measured by engine/activation_calibration.h). With one scale per
// tensor, the few channels whose activations are far larger than the rest ("outliers") set
// the scale and crush every other channel's resolution. Shadow outlier execution keeps those
// channels out of the integer matmul (their weights are zero there, the scale covers the
// others) and computes them in float on the side, adding the result back.
//
// Four activation points per layer feed matmuls: the normed input of Q|K|V, the attention
// output (into the output projection), the normed input of gate|up, and the SwiGLU hidden
// state (into the down projection). The output head keeps its own format (its packed copy
// doubles as the tied embedding table).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "reprise/types.h"

namespace reprise::model {

// The activation points of one layer.
enum class ActivationPoint : int { kAttnIn = 0, kAttnOut = 1, kFfnIn = 2, kFfnHidden = 3 };
inline constexpr int kActivationPointsPerLayer = 4;
inline int ActivationPointIndex(int layer, ActivationPoint point) {
  return layer * kActivationPointsPerLayer + static_cast<int>(point);
}
const char* ActivationPointName(ActivationPoint point);  // "attn_in", ...

// What a calibration pass measured: per point (ActivationPointIndex), the largest |value| of
// each channel over the calibration text's tokens. Kept in a file by
// engine/activation_calibration.h.
struct ActivationCalibration {
  std::string model_fingerprint;                   // hex, of the model file
  int64_t tokens = 0;                              // calibration tokens run
  std::vector<std::vector<float>> channel_absmax;  // [point][channel]
};

struct StaticInt8Options {
  Int8Scheme scheme = Int8Scheme::kPerBlock;
  // kPerTensorShadow: the share of all the layers' input channels computed in float. The
  // budget goes to the channels that stand out most against their own tensor (largest ratio
  // of their absmax to the tensor's median channel absmax), so tensors with real outliers get
  // many and the others none: llm.npu's finding that outliers gather in a few layers.
  double outlier_fraction = 0.01;
};

// How one activation point is quantized.
struct ActivationQuant {
  float scale = 0.0f;             // per-tensor: x ~= scale * q; 0 = per-block (dynamic)
  std::vector<int32_t> outliers;  // channels computed in float (shadow), ascending
};

// The quantization of every point: the per-tensor scale covers the largest absmax of the
// channels that are not outliers (min-max calibration: values past it saturate at run time).
// Returns [point] (empty for kPerBlock). Requires: calibration.channel_absmax.size() ==
// num_layers * kActivationPointsPerLayer.
std::vector<ActivationQuant> PlanStaticInt8(const ActivationCalibration& calibration,
                                            const StaticInt8Options& options);

}  // namespace reprise::model
