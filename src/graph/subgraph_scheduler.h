// Out-of-order subgraph scheduling (docs/design.md §9, from llm.npu).
//
// A prefill of several graph calls ("chunks") of a graph cut into shards (layer groups) is a
// DAG of (chunk, shard) subgraphs: (c, s) needs (c, s - 1), whose residual stream it
// continues, and (c - 1, s), which writes the KV of the same layers for the earlier tokens
// that (c, s) attends to. In-order execution runs (0, 0), (0, 1), ..., (1, 0), ... one at a
// time. RunOutOfOrder instead gives any ready subgraph to any free worker (a group of
// threads, or another processor), within a window of chunks in flight, so that one slow
// subgraph does not hold up the rest: with two workers, chunk c's shard s runs beside chunk
// c + 1's shard s - 1 (a wavefront).
//
// The work itself is the caller's: a callback runs one subgraph on one worker. A worker may
// decline subgraphs (`accepts`), the seam where an accelerator backend takes the ones it
// suits (say the matmul-heavy shards) and leaves the rest to the CPU.
#pragma once

#include <functional>

namespace reprise::graph {

struct Subgraph {
  int chunk = 0;
  int shard = 0;
};

struct SubgraphSchedulerOptions {
  // Workers: worker 0 is the calling thread, the others are threads started for the run.
  int num_workers = 1;
  // Chunks started and not yet finished, at most (each holds an execution context).
  int window = 2;
  // Whether `worker` takes `subgraph`; null = every worker takes every subgraph. Every
  // subgraph must be taken by some worker.
  std::function<bool(int worker, const Subgraph& subgraph)> accepts;
};

// Calls run(subgraph, worker) once for every chunk < num_chunks and shard < num_shards, never
// two subgraphs of one chunk at once, (c, s) only after (c, s - 1) and (c - 1, s) returned,
// chunk c's first shard only once fewer than `window` earlier chunks are unfinished; among
// ready subgraphs a free worker takes the one of the earliest chunk. When run returns false
// (an error, a cancellation), nothing more is started; the call returns false once the
// running subgraphs are done. Returns true when every subgraph ran. Requires: num_chunks,
// num_shards >= 0; num_workers, window >= 1.
bool RunOutOfOrder(int num_chunks, int num_shards, const SubgraphSchedulerOptions& options,
                   const std::function<bool(const Subgraph& subgraph, int worker)>& run);

}  // namespace reprise::graph
