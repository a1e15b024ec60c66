// Executor: runs a CompiledGraph's ops with the chosen kernels on a thread pool.
//
// Each op is one parallel region: matrix multiplies split over output rows (groups of 8),
// attention over (query, head) ranges, row-wise ops over tokens. A run allocates nothing.
// Thread-compatible: one Executor per thread pool; Run() is not re-entrant.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "graph/execution_context.h"
#include "kernels/kernel_set.h"

namespace reprise::graph {

// Where the runs of an executor spent their time, by kind of op, summed over runs (for
// `reprise bench prefill`'s profile). Matmuls: the multiply-adds they computed (rows x N x K),
// so that time gives the achieved rate.
struct OpTimes {
  double matmul_ms = 0;
  double attention_ms = 0;
  double other_ms = 0;  // norms, RoPE, SwiGLU, KV stores, quantization, selection, ...
  double matmul_macs = 0;
  // The part of the matmul figures spent in the block formats, whose products are int8
  // (kernels::UsesQuantizedActivations); the rest multiply floats.
  double matmul_int8_ms = 0;
  double matmul_int8_macs = 0;
};

// Calibration of static activation scales (ObserveActivationsOp): per observation point, the
// largest |value| seen in each channel, over every valid row of every run.
struct ActivationStats {
  std::vector<std::vector<float>> channel_absmax;  // [point][channel]
};

class Executor {
 public:
  // `pool` and `kernels` must outlive the executor.
  Executor(ThreadPool& pool, const kernels::KernelSet& kernels)
      : pool_(&pool), kernels_(&kernels) {}

  // Runs shards [shard_begin, shard_end) of the context's graph (all shards by default).
  // Requires: inputs set and a KV cache bound; shards run in order across calls.
  void Run(ExecutionContext& context, int shard_begin = 0, int shard_end = -1);

  const kernels::KernelSet& kernels() const { return *kernels_; }
  ThreadPool& pool() const { return *pool_; }

  // Adds every op's time to `times` from now on (null: stop; the default). Timing costs two
  // clock reads per op; `times` must outlive its use.
  void set_op_times(OpTimes* times) { op_times_ = times; }

  // Folds what ObserveActivationsOps see into `stats` from now on (null: stop; the default);
  // `stats` must outlive its use. Graphs without those ops add nothing.
  void set_activation_stats(ActivationStats* stats) { activation_stats_ = stats; }

 private:
  void RunOp(const Op& op, ExecutionContext& context, const RowSet& set, int rows);
  void RunAttentionScores(const AttentionScoreOp& op, ExecutionContext& context, const RowSet& set);

  ThreadPool* pool_;
  const kernels::KernelSet* kernels_;
  OpTimes* op_times_ = nullptr;
  ActivationStats* activation_stats_ = nullptr;
};

}  // namespace reprise::graph
