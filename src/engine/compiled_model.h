// CompiledModel: the immutable, shared half of running a model (the "program" of the
// program / session split, as ExecuTorch's Program and Method): the loaded file, the packed
// weights, the thread pool, the kernels and every compiled graph. Sessions (GraphBackend, one
// per conversation or server slot) hold only what a sequence needs — execution contexts and
// the KV cache — and borrow the rest from here, so a second session or a second tenant costs
// KV memory only: no second load, no second packing, no second compilation.
//
// Graphs are compiled on first request and kept: the prefill and decode graphs, and one
// recompute graph per (capacity, ratio, check layer, ...) that a session asks for (the static
// shape of a recompute graph fixes its selection ratio). Thread-safe: any number of sessions
// on any threads may use one CompiledModel; the LoadedModel must outlive it.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "base/thread_pool.h"
#include "engine/loaded_model.h"
#include "graph/compiled_graph.h"
#include "kernels/kernel_set.h"
#include "model/graph_compiler.h"
#include "model/packed_weights.h"
#include "reprise/defaults.h"
#include "reprise/engine.h"

namespace reprise::engine {

struct CompiledModelOptions {
  int num_threads = 0;          // 0 = every usable core
  bool scalar_kernels = false;  // force the portable kernels (tests)
  model::PackOptions pack;
  // Weights already packed and a pool already running (e.g. by a benchmark that built them
  // for another purpose); null = made here.
  std::shared_ptr<const model::PackedWeights> shared_weights;
  std::shared_ptr<ThreadPool> shared_pool;
  // Static INT8 (pack.static_int8, model/static_int8.h): where the model's activation
  // calibration is kept (engine/activation_calibration.h). Unless pack.activation_calibration
  // is given, the one stored there is used; without one, the weights are first packed as
  // usual, a pass over the built-in sample text measures the ranges (and saves them there
  // when this is set), and the weights are packed again for the scheme.
  std::string calibration_dir;
};

// The static INT8 options of the public API's scheme (reprise/engine.h).
model::StaticInt8Options StaticInt8For(Int8Scheme scheme, double outlier_fraction);

// What a recompute graph is compiled for (model::CompileOptions' recompute fields).
struct RecomputeGraphSpec {
  int capacity = 256;
  double ratio = kDefaultRecomputeRatio;
  int check_layer = 1;
  bool deviation_includes_v = false;
  bool refresh_check_layer = false;
  auto Key() const {
    return std::tuple(capacity, ratio, check_layer, deviation_includes_v, refresh_check_layer);
  }
};

class CompiledModel {
 public:
  // Packs the weights (unless shared ones are given). Errors: those of ThreadPool::Create
  // and PackedWeights::Create, of the activation calibration. With shared weights, `pack` is
  // not used (they are packed as they are).
  static Result<std::shared_ptr<const CompiledModel>> Create(const LoadedModel& model,
                                                             const CompiledModelOptions& options);

  const LoadedModel& model() const { return *model_; }
  const model::ModelConfig& config() const { return weights_->config(); }
  const model::PackedWeights& weights() const { return *weights_; }
  std::shared_ptr<const model::PackedWeights> shared_weights() const { return weights_; }
  std::shared_ptr<ThreadPool> shared_pool() const { return pool_; }
  // Thread-safe (ThreadPool serialises regions started by different threads).
  ThreadPool& pool() const { return *pool_; }
  const kernels::KernelSet& kernels() const { return *kernels_; }
  // The identity of the KV these weights and kernels compute (kv_arithmetic.h): chunks are
  // keyed by it, so KV of other arithmetic is never taken as this model's.
  uint64_t kv_fingerprint() const { return kv_fingerprint_; }
  // Its inputs in words (DescribeKvArithmetic).
  const std::string& kv_arithmetic() const { return kv_arithmetic_; }

  // The prefill graph of `capacity` rows, the decode graph (capacity 1), a recompute graph:
  // compiled on the first call with those arguments, the same object afterwards. Errors:
  // those of model::Compile.
  Result<std::shared_ptr<const graph::CompiledGraph>> PrefillGraph(int capacity) const;
  Result<std::shared_ptr<const graph::CompiledGraph>> DecodeGraph() const;
  // The graph that runs one decode step of up to `capacity` sessions at once (DecodeBatcher).
  Result<std::shared_ptr<const graph::CompiledGraph>> DecodeBatchGraph(int capacity) const;
  Result<std::shared_ptr<const graph::CompiledGraph>> RecomputeGraph(
      const RecomputeGraphSpec& spec) const;
  // The query probe of query-aware selection (graph::GraphKind::kQueryProbe) over `capacity`
  // tokens (at most graph::kMaxProbeRows), scoring at `check_layer`.
  Result<std::shared_ptr<const graph::CompiledGraph>> QueryProbeGraph(int capacity,
                                                                      int check_layer) const;

  // How many graphs have been compiled so far (tests: a second session compiles none).
  int graphs_compiled() const;

 private:
  CompiledModel() = default;
  using GraphKey = std::tuple<int, int, double, int, bool, bool>;  // kind, capacity, recompute
  Result<std::shared_ptr<const graph::CompiledGraph>> GetOrCompile(
      const GraphKey& key, graph::GraphKind kind, int capacity,
      const model::CompileOptions& options) const;

  const LoadedModel* model_ = nullptr;
  std::shared_ptr<ThreadPool> pool_;
  std::shared_ptr<const model::PackedWeights> weights_;
  const kernels::KernelSet* kernels_ = nullptr;
  uint64_t kv_fingerprint_ = 0;
  std::string kv_arithmetic_;
  mutable Mutex mutex_;
  mutable std::map<GraphKey, std::shared_ptr<const graph::CompiledGraph>> graphs_
      REPRISE_GUARDED_BY(mutex_);
};

}  // namespace reprise::engine
