// Checks that a model's weights are finite: a NaN or infinity in a weight makes every logit
// NaN, so such a file is refused at load (Corrupt, naming the tensor and the element or block)
// rather than producing garbage.
//
// What is read: every value of F32, F16 and BF16 tensors, and the scales (`d`, and `m` or
// `dmin` where the block has one) of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K..Q6_K blocks; the
// integer quants of a block cannot be non-finite. Other types are not checked. The scan is one
// pass over the F32/F16/BF16 data and one strided read per quantized block. Measured (warm
// page cache, 2 busy cores): stories260K (F32) 0.05 ms of scanning against ~10 ms of
// PackedWeights::Create; SmolLM2-135M Q8_0 5-14 ms against 265-770 ms, F16 10-15 ms against
// 275-400 ms; 48-128 ms when the scan is the first to touch the pages (their faults are then
// saved by the packing that follows). Thread-safe (reads only).
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace reprise::model {

// Errors: Corrupt for the first non-finite value or scale of `tensor`.
Status CheckTensorFinite(const gguf::TensorInfo& tensor);

// CheckTensorFinite on every tensor of `file`, in directory order.
Status CheckWeightsFinite(const gguf::GgufFile& file);

}  // namespace reprise::model
