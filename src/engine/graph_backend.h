// GraphBackend: InferenceBackend over fixed-shape compiled graphs on the CPU (docs/design.md §3).
//
// One session of a CompiledModel (compiled_model.h): it borrows the packed weights, the
// thread pool and the compiled graphs (a prefill graph of capacity Lp, the decode graph, a
// recompute graph) and owns what one sequence needs — an execution context per graph and the
// KV cache. A prompt runs through the prefill graph in chunks of Lp tokens (the last one
// padded); each generated token runs through the decode graph. Confined to one thread; other
// sessions of the same CompiledModel may run on other threads. The LoadedModel must outlive
// it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "engine/compiled_model.h"
#include "engine/decode_batcher.h"
#include "engine/inference_backend.h"
#include "engine/loaded_model.h"
#include "graph/compiled_graph.h"
#include "graph/execution_context.h"
#include "graph/executor.h"
#include "kv/kv_cache.h"
#include "model/graph_compiler.h"
#include "model/packed_weights.h"
#include "reprise/defaults.h"

namespace reprise::engine {

struct GraphBackendOptions {
  int context_tokens = 2048;   // KV cache capacity
  int prefill_capacity = 128;  // Lp
  // Selective recompute graph (reuse of cached chunks); 0 = none compiled.
  int recompute_capacity = 0;  // Ls
  double recompute_ratio = kDefaultRecomputeRatio;
  int check_layer = 1;
  bool deviation_includes_v = false;
  bool refresh_check_layer = false;  // see model::CompileOptions
  // Quality guard: a recompute call whose residual deviation is above this stops at the check
  // layer (graph::ExecutionContext::set_abort_above); the caller then prefills it. 0 = off.
  double guard_deviation = 0.0;
  // Adaptive recompute: selected rows whose relative deviation is below this are not
  // recomputed (graph::ExecutionContext::set_min_relative_deviation). 0 = off.
  double recompute_min_deviation = 0.0;
  // The same for rows of stable context only (graph::kRowStableContext). 0 = off.
  double stable_min_deviation = 0.0;
  // Query-aware selection's probe graph over this many tokens (at most
  // graph::kMaxProbeRows), scoring at check_layer; 0 = none compiled.
  int query_probe_capacity = 0;
  int num_threads = 0;          // 0 = every usable core
  bool scalar_kernels = false;  // force the portable kernels (tests)
  // Static shapes: every call of the prefill, recompute and probe graphs computes its full
  // capacity, padding rows included (and a recompute call's selected phase its full
  // ceil(r * Ls) rows), as a static NPU / ahead-of-time graph must. Same results.
  bool strict_shapes = false;
  model::PackOptions pack;
  // Where a static INT8 scheme's activation calibration is kept (CompiledModelOptions).
  std::string calibration_dir;
  // Weights already packed and a pool already running, shared by several backends of one
  // model (e.g. the sessions of a benchmark); both null = the backend makes its own.
  // Shared because each session's backend may be created and dropped independently.
  // Ignored when the backend is created on a CompiledModel (which holds its own).
  std::shared_ptr<const model::PackedWeights> shared_weights;
  std::shared_ptr<ThreadPool> shared_pool;
  // Decode steps (Append of one token) run through this batcher, batched with those of other
  // sessions of the same CompiledModel; null = through the session's own decode graph. Must
  // outlive the backend.
  DecodeBatcher* decode_batcher = nullptr;
  // Out-of-order subgraph scheduling (graph/subgraph_scheduler.h, llm.npu): a prefill of
  // several calls runs its (call, shard) subgraphs on this many worker groups, each with its
  // share of the threads, any ready subgraph on any free group, at most `out_of_order_window`
  // calls in flight (each with its own execution context). 0 or 1 = in order on every thread
  // (the default). Used for prefills of consecutive slots with no shard gate; results are
  // bit-identical to in-order.
  int out_of_order_groups = 0;
  int out_of_order_window = 2;
};

class GraphBackend : public InferenceBackend {
 public:
  // A session of `compiled`: takes (compiling on first use) the graphs `options` asks for
  // and allocates the execution contexts and the KV cache; the weight, thread and kernel
  // fields of `options` are the CompiledModel's. Errors: InvalidArgument, those of
  // model::Compile, ResourceExhausted.
  static Result<std::unique_ptr<GraphBackend>> Create(std::shared_ptr<const CompiledModel> compiled,
                                                      const GraphBackendOptions& options);
  // A backend with a CompiledModel of its own (packing the weights unless shared ones are
  // given). Errors: also those of CompiledModel::Create.
  static Result<std::unique_ptr<GraphBackend>> Create(const LoadedModel& model,
                                                      const GraphBackendOptions& options);

  const model::ModelConfig& config() const override { return compiled_->config(); }
  int num_tokens() const override { return num_tokens_; }
  int capacity_tokens() const override { return kv_->shape().capacity; }
  Result<std::span<const float>> Append(std::span<const int32_t> tokens) override;
  void Truncate(int num_tokens) override;
  const char* name() const override { return name_.c_str(); }
  int num_threads() const override { return compiled_->pool().num_threads(); }

  // Runs `tokens` through the prefill graph (in chunks of its capacity) at explicit
  // positions, writing their KV to `slots`; afterwards the first `num_tokens` slots hold the
  // sequence. Logits of the last token are in last_logits(). Errors: InvalidArgument.
  Status RunPrefill(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                    std::span<const int32_t> slots, int num_tokens_after);

  // One call of the selective recompute graph (docs/design.md §2) over at most Ls tokens whose
  // reused KV is already in their slots; `forced` rows (new tokens, the prompt's last token)
  // are always recomputed. Returns the input rows that were recomputed (valid until the next
  // call). Requires: a recompute graph was compiled. Errors: InvalidArgument.
  Result<std::span<const int32_t>> RunRecompute(
      std::span<const int32_t> tokens, std::span<const int32_t> positions,
      std::span<const int32_t> slots, std::span<const uint8_t> forced, int num_tokens_after,
      std::span<const float> row_attention = {},
      TokenSelection key = TokenSelection::kDeviation);
  // Query-aware selection's probe (graph::GraphKind::kQueryProbe): runs `tokens` (the
  // prompt's last ones, at most query_probe_capacity; slots after every reused one) through
  // the layers before the check layer over the cache as it stands, and returns the attention
  // they pay at the check layer to each slot before the first of theirs (entry s: slot s;
  // valid until the next probe). The cache's layers below the check layer then hold the
  // probe's KV in its slots until the real computation overwrites them; num_tokens() does
  // not change. With a shard gate set, it first waits for the KV of layers [0, check layer]
  // only (the layers it reads), not for the rest. Requires: a probe graph was compiled.
  // Errors: InvalidArgument; Unavailable when the gate says that KV could not be placed.
  Result<std::span<const float>> RunQueryProbe(std::span<const int32_t> tokens,
                                               std::span<const int32_t> positions,
                                               std::span<const int32_t> slots,
                                               int64_t num_visible_slots);
  bool has_query_probe() const { return probe_ != nullptr; }
  int query_probe_capacity() const { return probe_ ? probe_->capacity() : 0; }
  // The last RunRecompute's residual deviation (graph::ExecutionContext::residual_deviation):
  // how far the reused rows it left alone deviate from fresh ones, relatively. 0 before any.
  double last_residual_deviation() const;
  // Whether the quality guard stopped the last RunRecompute at the check layer: its tokens'
  // KV above that layer is stale and must be recomputed (by RunPrefill).
  bool last_recompute_aborted() const;

  // The shard pipeline's gate: when set, each prefill or recompute call runs shard by shard,
  // and before each shard asks the gate whether the KV of layers [0, the shard's end layer)
  // it attends to is in place (blocking until it is); false fails the call with Unavailable.
  // Empty = whole calls, no gate.
  using ShardGate = std::function<bool(int end_layer)>;
  void set_shard_gate(ShardGate gate) { shard_gate_ = std::move(gate); }
  // The first layer of each shard of the graphs but the first (for KvPreparationOrder).
  std::vector<int> shard_first_layers() const;

  // A flag that, once set (from any thread), makes RunPrefill stop before its next graph
  // call with Cancelled (the KV then holds part of the tokens); null = never.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  // Declares that the first `num_tokens` slots of the cache hold the sequence (after KV was
  // placed in them from outside, e.g. reused chunks). Requires: <= capacity_tokens().
  void SetNumTokens(int num_tokens);

  std::span<const float> last_logits() const { return last_logits_; }
  // Graph calls run so far (prefill, recompute, probe and decode calls), for reports.
  int64_t num_graph_calls() const { return num_graph_calls_; }
  bool has_recompute_graph() const { return recompute_ != nullptr; }
  int recompute_capacity() const { return recompute_ ? recompute_->capacity() : 0; }

  const graph::CompiledGraph& prefill_graph() const { return *prefill_; }
  const CompiledModel& compiled() const { return *compiled_; }
  std::shared_ptr<const CompiledModel> shared_compiled() const { return compiled_; }
  const model::PackedWeights& weights() const { return compiled_->weights(); }
  std::shared_ptr<const model::PackedWeights> shared_weights() const {
    return compiled_->shared_weights();
  }
  std::shared_ptr<ThreadPool> shared_pool() const { return compiled_->shared_pool(); }
  ThreadPool& pool() { return compiled_->pool(); }
  kv::KvCache& kv_cache() { return *kv_; }
  int prefill_capacity() const { return prefill_->capacity(); }
  // Time every op of this backend's graph calls into `times` (graph::Executor::set_op_times).
  void set_op_times(graph::OpTimes* times) { executor_->set_op_times(times); }
  // The kernels this backend's graphs run.
  const kernels::KernelSet& kernels() const { return executor_->kernels(); }

 private:
  GraphBackend() = default;
  // Runs one call of `context`'s graph (at most its capacity of tokens); `forced` and the
  // row attention (read when `key` is not kDeviation) only for the recompute graph.
  Status RunCall(graph::ExecutionContext& context, std::span<const int32_t> tokens,
                 std::span<const int32_t> positions, std::span<const int32_t> slots,
                 std::span<const uint8_t> forced, int64_t num_visible_slots,
                 std::span<const float> row_attention = {},
                 TokenSelection key = TokenSelection::kDeviation);
  Status CheckTokens(std::span<const int32_t> tokens) const;

  std::string name_;
  std::shared_ptr<const CompiledModel> compiled_;
  std::shared_ptr<const graph::CompiledGraph> prefill_;
  std::shared_ptr<const graph::CompiledGraph> decode_;
  std::shared_ptr<const graph::CompiledGraph> recompute_;
  std::unique_ptr<graph::ExecutionContext> recompute_context_;
  std::shared_ptr<const graph::CompiledGraph> probe_;
  int probe_end_layer_ = 0;  // the probe reads the cache's layers [0, this)
  std::unique_ptr<graph::ExecutionContext> probe_context_;
  std::unique_ptr<graph::ExecutionContext> prefill_context_;
  std::unique_ptr<graph::ExecutionContext> decode_context_;
  std::unique_ptr<graph::Executor> executor_;
  // Out-of-order prefill: the contexts of the calls in flight, and per worker group a pool
  // and an executor on it.
  Status RunPrefillOutOfOrder(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                              std::span<const int32_t> slots);
  int out_of_order_window_ = 0;
  std::vector<std::unique_ptr<graph::ExecutionContext>> out_of_order_contexts_;
  std::vector<std::unique_ptr<ThreadPool>> group_pools_;
  std::vector<std::unique_ptr<graph::Executor>> group_executors_;
  std::unique_ptr<kv::KvCache> kv_;
  std::vector<graph::KvLayerView> kv_layers_;
  graph::KvBinding kv_binding_;
  DecodeBatcher* decode_batcher_ = nullptr;
  std::vector<float> batch_logits_;  // [vocab] a batched decode step's logits
  std::vector<int32_t> positions_scratch_, slots_scratch_;  // [prefill capacity]
  int num_tokens_ = 0;
  int64_t num_graph_calls_ = 0;
  ShardGate shard_gate_;
  std::span<const float> last_logits_;
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace reprise::engine
