// The calibration of static INT8 activation scales (model/static_int8.h): a pass of the
// model over a text that records, at every activation point, the largest |value| of each
// channel — what `reprise calibrate --activations` measures and stores, and what a load with a
// static INT8 scheme measures on the built-in sample text when no stored one exists.
//
// The pass runs the model's own compiled prefill graph (its current packed weights and
// kernels, with graph::ObserveActivationsOp at every point), so the ranges are those of the
// activations the integer matmuls will see. One file per model (not per machine: ranges do not
// depend on the CPU), next to the graph-size calibration.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/loaded_model.h"
#include "kernels/kernel_set.h"
#include "model/packed_weights.h"
#include "model/static_int8.h"

namespace reprise::engine {

// Runs `tokens` (positions 0, 1, ...) through a prefill graph of `chunk` rows, chunk after
// chunk over one KV cache, observing every activation point. Errors: InvalidArgument (no
// tokens, chunk < 1), those of compiling the graph.
Result<model::ActivationCalibration> MeasureActivations(const model::PackedWeights& weights,
                                                        ThreadPool& pool,
                                                        const kernels::KernelSet& kernels,
                                                        std::span<const int32_t> tokens,
                                                        int chunk = 64);

// The whole pass for a model file: packs its weights without any static INT8 scheme (as
// `pack` says otherwise), runs the first `max_tokens` tokens of `text` (BOS first) and stamps
// the result with the model's fingerprint. Errors: those of packing and MeasureActivations;
// InvalidArgument when the text has no tokens.
Result<model::ActivationCalibration> MeasureModelActivations(
    const LoadedModel& model, ThreadPool& pool, const kernels::KernelSet& kernels,
    std::string_view text, int64_t max_tokens, const model::PackOptions& pack = {});

// MeasureModelActivations with its own pool of `num_threads` (0 = every core) and the best
// kernels: `reprise calibrate --activations`.
Result<model::ActivationCalibration> CalibrateActivations(const LoadedModel& model,
                                                          std::string_view text, int64_t max_tokens,
                                                          int num_threads);

// A table of the ranges per layer and activation point: the largest channel absmax, the
// median, their ratio, and how many channels the shadow scheme computes in float at
// `outlier_fraction` (where outliers gather).
std::string DescribeActivationCalibration(const model::ActivationCalibration& calibration,
                                          double outlier_fraction);

std::string ActivationCalibrationToJson(const model::ActivationCalibration& calibration);
// Errors: Corrupt (not this format; a negative or non-finite value).
Result<model::ActivationCalibration> ActivationCalibrationFromJson(std::string_view json);

// The file of a model's activation calibration under `dir`.
std::string ActivationCalibrationPath(const std::string& dir, uint64_t fingerprint);
Status SaveActivationCalibration(const model::ActivationCalibration& calibration,
                                 const std::string& path);
// Errors: those of reading the file, Corrupt.
Result<model::ActivationCalibration> LoadActivationCalibration(const std::string& path);

}  // namespace reprise::engine
