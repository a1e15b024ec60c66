#include "engine/compiled_model.h"

#include <cstdio>

#include "base/logging.h"
#include "base/memory_usage.h"
#include "engine/activation_calibration.h"
#include "engine/kv_arithmetic.h"
#include "engine/sample_text.h"
#include "kernels/matmul_scratch.h"

namespace reprise::engine {
namespace {

// Tokens of the built-in sample text that a load without a stored calibration measures.
constexpr int64_t kQuickActivationTokens = 512;

// The calibration static INT8 needs: the stored one, else one measured now (and stored).
Result<std::shared_ptr<const model::ActivationCalibration>> FindOrMeasureActivations(
    const LoadedModel& model, ThreadPool& pool, const kernels::KernelSet& kernels,
    const CompiledModelOptions& options) {
  const std::string path =
      options.calibration_dir.empty()
          ? std::string()
          : ActivationCalibrationPath(options.calibration_dir, model.fingerprint());
  if (!path.empty()) {
    Result<model::ActivationCalibration> stored = LoadActivationCalibration(path);
    if (stored.ok()) {
      return std::make_shared<const model::ActivationCalibration>(std::move(stored).value());
    }
    if (stored.error().code() != StatusCode::kNotFound) {
      REPRISE_LOG(kWarning) << "activation calibration " << path
                            << " not used (measured again): " << stored.error().ToString();
    }
  }
  REPRISE_ASSIGN_OR_RETURN(model::ActivationCalibration measured,
                           MeasureModelActivations(model, pool, kernels, SampleText(),
                                                   kQuickActivationTokens, options.pack));
  if (!path.empty()) {
    const Status saved = SaveActivationCalibration(measured, path);
    if (!saved.ok())
      REPRISE_LOG(kWarning) << "activation calibration not saved: " << saved.ToString();
  }
  REPRISE_LOG(kInfo) << "activation ranges measured on " << measured.tokens
                     << " tokens of the built-in sample text";
  return std::make_shared<const model::ActivationCalibration>(std::move(measured));
}

}  // namespace

model::StaticInt8Options StaticInt8For(Int8Scheme scheme, double outlier_fraction) {
  model::StaticInt8Options options;
  options.scheme = scheme;
  options.outlier_fraction = outlier_fraction;
  return options;
}

Result<std::shared_ptr<const CompiledModel>> CompiledModel::Create(
    const LoadedModel& model, const CompiledModelOptions& options) {
  std::shared_ptr<CompiledModel> m(new CompiledModel());
  m->model_ = &model;
  if (options.shared_pool) {
    m->pool_ = options.shared_pool;
  } else {
    REPRISE_ASSIGN_OR_RETURN(
        m->pool_, ThreadPool::Create({.num_threads = options.num_threads,
                                      .thread_start = kernels::ReserveThreadMatMulScratch}));
  }
  m->kernels_ = options.scalar_kernels ? &kernels::ScalarKernels() : &kernels::BestKernels();
  if (options.shared_weights) {
    m->weights_ = options.shared_weights;
  } else {
    model::PackOptions pack = options.pack;
    if (!pack.q6_k_format) pack.q6_k_format = m->kernels_->q6_k_format;
    if (pack.static_int8.scheme != Int8Scheme::kPerBlock && !pack.activation_calibration) {
      REPRISE_ASSIGN_OR_RETURN(pack.activation_calibration,
                               FindOrMeasureActivations(model, *m->pool_, *m->kernels_, options));
    }
    REPRISE_ASSIGN_OR_RETURN(
        m->weights_, model::PackedWeights::Create(model.file(), model.config(), *m->pool_, pack));
  }
  m->kv_fingerprint_ = KvArithmeticFingerprint(model, *m->weights_, *m->kernels_);
  m->kv_arithmetic_ = DescribeKvArithmetic(*m->weights_, *m->kernels_);
  REPRISE_LOG(kDebug) << "weights packed: " << m->weights_->packed_bytes() / 1048576.0
                      << " MiB; resident " << CurrentRssMb() << " MiB";
  return std::shared_ptr<const CompiledModel>(std::move(m));
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::GetOrCompile(
    const GraphKey& key, graph::GraphKind kind, int capacity,
    const model::CompileOptions& options) const {
  MutexLock lock(mutex_);
  auto it = graphs_.find(key);
  if (it != graphs_.end()) return it->second;
  REPRISE_ASSIGN_OR_RETURN(graph::CompiledGraph compiled,
                           model::Compile(*weights_, kind, capacity, options));
  auto shared = std::make_shared<const graph::CompiledGraph>(std::move(compiled));
  graphs_.emplace(key, shared);
  REPRISE_LOG(kDebug) << "graph compiled: capacity " << capacity << ", arena "
                      << shared->arena_bytes() / 1048576.0 << " MiB";
  return shared;
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::PrefillGraph(
    int capacity) const {
  return GetOrCompile(
      GraphKey{static_cast<int>(graph::GraphKind::kPrefill), capacity, 0.0, 0, false, false},
      graph::GraphKind::kPrefill, capacity, model::CompileOptions{});
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::DecodeGraph() const {
  return GetOrCompile(
      GraphKey{static_cast<int>(graph::GraphKind::kDecode), 1, 0.0, 0, false, false},
      graph::GraphKind::kDecode, 1, model::CompileOptions{});
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::DecodeBatchGraph(
    int capacity) const {
  return GetOrCompile(
      GraphKey{static_cast<int>(graph::GraphKind::kDecodeBatch), capacity, 0.0, 0, false, false},
      graph::GraphKind::kDecodeBatch, capacity, model::CompileOptions{});
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::RecomputeGraph(
    const RecomputeGraphSpec& spec) const {
  model::CompileOptions options;
  options.check_layer = spec.check_layer;
  options.recompute_ratio = spec.ratio;
  options.deviation_includes_v = spec.deviation_includes_v;
  options.refresh_check_layer = spec.refresh_check_layer;
  return GetOrCompile(
      GraphKey{static_cast<int>(graph::GraphKind::kRecompute), spec.capacity, spec.ratio,
               spec.check_layer, spec.deviation_includes_v, spec.refresh_check_layer},
      graph::GraphKind::kRecompute, spec.capacity, options);
}

Result<std::shared_ptr<const graph::CompiledGraph>> CompiledModel::QueryProbeGraph(
    int capacity, int check_layer) const {
  model::CompileOptions options;
  options.check_layer = check_layer;
  return GetOrCompile(GraphKey{static_cast<int>(graph::GraphKind::kQueryProbe), capacity, 0.0,
                               check_layer, false, false},
                      graph::GraphKind::kQueryProbe, capacity, options);
}

int CompiledModel::graphs_compiled() const {
  MutexLock lock(mutex_);
  return static_cast<int>(graphs_.size());
}

}  // namespace reprise::engine
