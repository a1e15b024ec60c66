// NPU-style static INT8 on a synthetic layer (docs/design.md §9): activations with planted outlier
// channels through StaticQuantizeOp and a kI8x8 MatMulOp, without and with shadow outlier
// execution, against the float product.
//
// The tolerance is the error a static int8 product may have when its scale covers only the
// ordinary channels (s_normal = their absmax / 127): half a step of every activation and of
// every weight, sum_k |w_k| s_normal / 2 + sum_k |x_k| d_row / 2. Shadow execution must meet
// it at every output (its outlier channels are exact floats). One per-tensor scale must cover
// the outliers, 60x the rest, so its steps are 60x coarser and most outputs miss it.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/random.h"
#include "base/thread_pool.h"
#include "graph/compiled_graph.h"
#include "graph/execution_context.h"
#include "graph/executor.h"
#include "kernels/kernel_set.h"
#include "kernels/kernel_test_util.h"
#include "kernels/packed_matrix.h"

namespace reprise::graph {
namespace {

constexpr int kRows = 6;
constexpr int64_t kIn = 96, kOut = 40;
constexpr int32_t kOutlierChannels[] = {7, 50};
constexpr float kOutlierGain = 60.0f;

struct Packed {
  std::vector<uint8_t> bytes;
  kernels::PackedMatrix view;
};

Packed PackFloat(kernels::PackedFormat format, const std::vector<float>& w, int64_t rows,
                 int64_t cols) {
  Packed p;
  p.bytes.resize(kernels::PackedMatrixBytes(format, rows, cols));
  kernels::PackMatrixRows(format, DType::kF32, reinterpret_cast<const uint8_t*>(w.data()), rows,
                          cols, 0, rows, p.bytes.data());
  p.view = kernels::PackedMatrix{format, rows, cols, p.bytes.data()};
  return p;
}

struct Layer {
  std::vector<float> x;           // [kRows][kIn]
  std::vector<float> w;           // [kOut][kIn]
  std::vector<double> reference;  // [kRows][kOut]
  float normal_absmax = 0, absmax = 0;
};

bool IsOutlier(int64_t channel) {
  return channel == kOutlierChannels[0] || channel == kOutlierChannels[1];
}

Layer MakeLayer() {
  Random rng(14);
  Layer l;
  l.x.resize(kRows * kIn);
  l.w.resize(kOut * kIn);
  for (float& v : l.x) v = static_cast<float>(rng.NextDouble() * 2 - 1);
  for (float& v : l.w) v = static_cast<float>(rng.NextDouble() * 0.1 - 0.05);
  for (int m = 0; m < kRows; ++m) {
    for (int32_t c : kOutlierChannels) l.x[m * kIn + c] *= kOutlierGain;
  }
  for (int64_t i = 0; i < kRows * kIn; ++i) {
    const bool outlier = IsOutlier(i % kIn);
    l.absmax = std::max(l.absmax, std::fabs(l.x[i]));
    if (!outlier) l.normal_absmax = std::max(l.normal_absmax, std::fabs(l.x[i]));
  }
  l.reference.assign(kRows * kOut, 0.0);
  for (int m = 0; m < kRows; ++m) {
    for (int64_t n = 0; n < kOut; ++n) {
      for (int64_t k = 0; k < kIn; ++k) {
        l.reference[m * kOut + n] += static_cast<double>(l.x[m * kIn + k]) * l.w[n * kIn + k];
      }
    }
  }
  return l;
}

// Runs StaticQuantizeOp -> MatMulOp (kI8x8, with a shadow matmul when `outliers` is not
// empty) on the layer's rows; returns the outputs.
std::vector<float> RunLayer(const Layer& l, const kernels::KernelSet& kernels, float scale,
                            const std::vector<int32_t>& outliers) {
  std::vector<float> w = l.w;
  std::vector<float> shadow_w(static_cast<size_t>(kOut) * outliers.size());
  for (int64_t n = 0; n < kOut; ++n) {
    for (size_t j = 0; j < outliers.size(); ++j) {
      shadow_w[n * outliers.size() + j] = w[n * kIn + outliers[j]];
      w[n * kIn + outliers[j]] = 0.0f;
    }
  }
  const Packed int8 = PackFloat(kernels::PackedFormat::kI8x8, w, kOut, kIn);
  const Packed shadow = PackFloat(kernels::PackedFormat::kF32x8, shadow_w, kOut,
                                  static_cast<int64_t>(outliers.size()));
  GraphBuilder b(GraphKind::kPrefill, kRows, 1);
  const BufferId in = b.NewBuffer("x", kRows * kIn * 4);
  const BufferId q = b.NewBuffer("x.i8", kRows * kIn);
  const BufferId outlier_values =
      outliers.empty()
          ? kNoBuffer
          : b.NewBuffer("x.outliers", kRows * static_cast<int64_t>(outliers.size()) * 4);
  const BufferId out = b.NewBuffer("y", kRows * kOut * 4);
  b.Add(StaticQuantizeOp{in, q, kIn, kIn, scale, outliers.data(),
                         static_cast<int64_t>(outliers.size()), outlier_values});
  b.Add(MatMulOp{&int8.view, q, kIn, out, kOut, 0, false, scale,
                 outliers.empty() ? nullptr : &shadow.view, outlier_values});
  const CompiledGraph graph = std::move(b).Build();
  auto context = std::move(ExecutionContext::Create(graph)).value();
  std::vector<uint16_t> k(kRows * 8), v(kRows * 8);
  std::vector<int32_t> slot_positions(kRows, -1);
  const KvLayerView layers[] = {{k.data(), v.data()}};
  const KvBinding kv{layers, kRows, slot_positions.data(), 1, 8};
  context->BindKv(kv);
  std::vector<int32_t> tokens(kRows, 0), positions(kRows);
  for (int m = 0; m < kRows; ++m) positions[m] = m;
  EXPECT_TRUE(context->SetInputs(tokens, positions, positions, kRows).ok());
  std::memcpy(context->buffer(in), l.x.data(), l.x.size() * 4);
  auto pool = std::move(ThreadPool::Create({.num_threads = 2})).value();
  Executor executor(*pool, kernels);
  executor.Run(*context);
  const float* y = reinterpret_cast<const float*>(context->buffer(out));
  return std::vector<float>(y, y + kRows * kOut);
}

// Outputs within the tolerance of a static int8 product whose scale covers the ordinary
// channels only, the outlier channels being exact: half a step of each ordinary activation
// and weight (the row's int8 step over its ordinary weights), plus float rounding.
int WithinTolerance(const Layer& l, const std::vector<float>& got) {
  const float s_normal = l.normal_absmax / 127.0f;
  int within = 0;
  for (int m = 0; m < kRows; ++m) {
    for (int64_t n = 0; n < kOut; ++n) {
      float w_absmax = 0.0f;
      for (int64_t k = 0; k < kIn; ++k) {
        if (!IsOutlier(k)) w_absmax = std::max(w_absmax, std::fabs(l.w[n * kIn + k]));
      }
      double bound = 1e-5 * std::fabs(l.reference[m * kOut + n]);
      for (int64_t k = 0; k < kIn; ++k) {
        if (IsOutlier(k)) continue;
        bound += std::fabs(l.w[n * kIn + k]) * s_normal / 2 +
                 std::fabs(l.x[m * kIn + k]) * w_absmax / 127.0 / 2;
      }
      within += std::fabs(got[m * kOut + n] - l.reference[m * kOut + n]) <= bound;
    }
  }
  return within;
}

TEST(StaticInt8Test, ShadowOutliersMeetTheToleranceThatOnePerTensorScaleMisses) {
  const Layer l = MakeLayer();
  const std::vector<float> per_tensor =
      RunLayer(l, kernels::ScalarKernels(), l.absmax / 127.0f, {});
  const std::vector<int32_t> outliers(std::begin(kOutlierChannels), std::end(kOutlierChannels));
  const std::vector<float> shadow =
      RunLayer(l, kernels::ScalarKernels(), l.normal_absmax / 127.0f, outliers);
  const int total = kRows * kOut;
  EXPECT_EQ(WithinTolerance(l, shadow), total);
  EXPECT_LT(WithinTolerance(l, per_tensor), total / 2);
  // And the shadow product's error is far below the per-tensor one's.
  double err_tensor = 0, err_shadow = 0;
  for (int i = 0; i < total; ++i) {
    err_tensor += std::pow(per_tensor[i] - l.reference[i], 2);
    err_shadow += std::pow(shadow[i] - l.reference[i], 2);
  }
  EXPECT_LT(err_shadow * 10, err_tensor);
}

// Values past the calibrated range saturate instead of wrapping: a per-tensor scale fitted to
// the ordinary channels, with no shadow, clips the outliers to +-127 steps.
TEST(StaticInt8Test, ValuesPastTheRangeSaturate) {
  const Layer l = MakeLayer();
  const float scale = l.normal_absmax / 127.0f;
  const std::vector<float> clipped = RunLayer(l, kernels::ScalarKernels(), scale, {});
  std::vector<float> x = l.x;
  for (float& v : x) v = std::fmin(std::fmax(v, -127.0f * scale), 127.0f * scale);
  Layer saturated = l;
  saturated.x = x;
  for (int m = 0; m < kRows; ++m) {
    for (int64_t n = 0; n < kOut; ++n) {
      double sum = 0;
      for (int64_t k = 0; k < kIn; ++k)
        sum += static_cast<double>(x[m * kIn + k]) * l.w[n * kIn + k];
      saturated.reference[m * kOut + n] = sum;
    }
  }
  saturated.normal_absmax = l.normal_absmax;
  EXPECT_EQ(WithinTolerance(saturated, clipped), kRows * kOut);
}

// Every kernel set computes the same bits as the scalar reference, shadow included.
TEST(StaticInt8Test, KernelSetsAgreeToTheBit) {
  const Layer l = MakeLayer();
  const std::vector<int32_t> outliers(std::begin(kOutlierChannels), std::end(kOutlierChannels));
  const std::vector<float> want =
      RunLayer(l, kernels::ScalarKernels(), l.normal_absmax / 127.0f, outliers);
  const std::vector<const kernels::KernelSet*> sets = kernels::testing::SimdSets();
  if (sets.empty()) GTEST_SKIP() << "this machine runs no SIMD kernel set to compare";
  for (const kernels::KernelSet* set : sets) {
    EXPECT_EQ(RunLayer(l, *set, l.normal_absmax / 127.0f, outliers), want) << set->name;
  }
}

// Calibration: ObserveActivationsOp folds the largest |value| of each channel of the valid
// rows (never the padding) into the executor's ActivationStats, run after run.
TEST(StaticInt8Test, ObservationKeepsEachChannelsLargestMagnitudeOfValidRows) {
  constexpr int kCapacity = 4;
  constexpr int64_t kDim = 3;
  GraphBuilder b(GraphKind::kPrefill, kCapacity, 1);
  const BufferId in = b.NewBuffer("x", kCapacity * kDim * 4);
  b.Add(ObserveActivationsOp{in, kDim, 1});
  const CompiledGraph graph = std::move(b).Build();
  auto context = std::move(ExecutionContext::Create(graph)).value();
  context->set_strict_shapes(true);  // padding rows are computed: they must not count
  std::vector<uint16_t> k(kCapacity * 8), v(kCapacity * 8);
  std::vector<int32_t> slot_positions(kCapacity, -1);
  const KvLayerView layers[] = {{k.data(), v.data()}};
  const KvBinding kv{layers, kCapacity, slot_positions.data(), 1, 8};
  context->BindKv(kv);
  auto pool = std::move(ThreadPool::Create({.num_threads = 2})).value();
  Executor executor(*pool, kernels::ScalarKernels());
  ActivationStats stats;
  executor.set_activation_stats(&stats);
  const std::vector<int32_t> tokens = {0, 0}, positions = {0, 1};
  ASSERT_TRUE(context->SetInputs(tokens, positions, positions, 2).ok());
  float* x = reinterpret_cast<float*>(context->buffer(in));
  const float first[kCapacity * kDim] = {1, -2, 0.5f, -3, 1, 0, 100, 100, 100, 100, 100, 100};
  std::memcpy(x, first, sizeof(first));
  executor.Run(*context);
  ASSERT_EQ(stats.channel_absmax.size(), 2u);
  EXPECT_TRUE(stats.channel_absmax[0].empty());
  EXPECT_EQ(stats.channel_absmax[1], (std::vector<float>{3, 2, 0.5f}));
  ASSERT_TRUE(
      context
          ->SetInputs(std::vector<int32_t>{0}, std::vector<int32_t>{2}, std::vector<int32_t>{2}, 3)
          .ok());
  const float second[kDim] = {0.5f, 7, -4};
  std::memcpy(x, second, sizeof(second));
  executor.Run(*context);
  EXPECT_EQ(stats.channel_absmax[1], (std::vector<float>{3, 7, 4}));
  executor.set_activation_stats(nullptr);
  executor.Run(*context);  // not observed any more: nothing changes
  EXPECT_EQ(stats.channel_absmax[1], (std::vector<float>{3, 7, 4}));
}

}  // namespace
}  // namespace reprise::graph
