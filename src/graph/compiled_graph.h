// CompiledGraph: an immutable, shareable program for one graph kind at one token capacity.
//
// Built once by a GraphBuilder (the model layer's Compile() drives it): the op list is bound
// to the packed weights, every intermediate buffer has its place in one arena, and the ops are
// cut into shards (consecutive layer groups) that can be run one after another. Per-run state
// (the arena memory, inputs, the KV cache binding) lives in an ExecutionContext, so one graph
// serves any number of requests. Thread-safe (immutable).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/arena_plan.h"
#include "graph/ops.h"

namespace reprise::graph {

enum class GraphKind : uint8_t {
  kPrefill,    // full forward of up to `capacity` tokens
  kDecode,     // one token
  kRecompute,  // selective recompute (reuse of cached chunks)
  // One token of each of up to `capacity` sequences (concurrent sessions' decode steps): each
  // row reads and writes its own KV cache (ExecutionContext::SetBatchInputs) and gets logits.
  kDecodeBatch,
  // Query-aware selection's probe (docs/design.md §2): the prompt's last tokens through the layers
  // before the check layer (over the reused KV as it stands), then, at the check layer, the
  // attention each of them pays to every cached slot (ExecutionContext::attention_scores). No
  // logits.
  kQueryProbe,
};

const char* GraphKindName(GraphKind kind);

struct Shard {
  int first_op = 0;  // [first_op, end_op)
  int end_op = 0;
  int first_layer = 0;  // layers [first_layer, end_layer) run in this shard
  int end_layer = 0;
};

struct BufferInfo {
  std::string name;
  int64_t size_bytes = 0;
  int64_t offset = 0;  // in the arena
};

class CompiledGraph {
 public:
  GraphKind kind() const { return kind_; }
  int capacity() const { return capacity_; }
  int num_layers() const { return num_layers_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Shard>& shards() const { return shards_; }
  const std::vector<BufferInfo>& buffers() const { return buffers_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  // The buffer holding the logits: [logits_rows, vocab] floats.
  BufferId logits_buffer() const { return logits_buffer_; }
  int logits_rows() const { return logits_rows_; }
  int64_t vocab_size() const { return vocab_size_; }
  // Index of the first op that runs on a single row (after SelectRowOp), or ops().size().
  int first_single_row_op() const { return first_single_row_op_; }
  // Index of the first op that runs on the selected rows (after SelectRowsOp), or
  // ops().size() when the graph selects nothing.
  int first_selected_op() const { return first_selected_op_; }

  // A readable listing of ops, buffers and the arena (for --verbose and tests).
  std::string Dump() const;

 private:
  friend class GraphBuilder;
  CompiledGraph() = default;

  GraphKind kind_ = GraphKind::kPrefill;
  int capacity_ = 0;
  int num_layers_ = 0;
  std::vector<Op> ops_;
  std::vector<Shard> shards_;
  std::vector<BufferInfo> buffers_;
  int64_t arena_bytes_ = 0;
  BufferId logits_buffer_ = kNoBuffer;
  int logits_rows_ = 0;
  int64_t vocab_size_ = 0;
  int first_single_row_op_ = 0;
  int first_selected_op_ = 0;
};

// Accumulates ops and buffers, then plans the arena. Confined to one thread.
class GraphBuilder {
 public:
  GraphBuilder(GraphKind kind, int capacity, int num_layers);

  // A new arena buffer of `size_bytes` (its lifetime is derived from the ops that use it).
  BufferId NewBuffer(std::string name, int64_t size_bytes);
  void Add(Op op);
  // Starts a new shard holding layers from `first_layer` on (the first shard starts
  // implicitly at op 0, layer 0).
  void BeginShard(int first_layer);
  void SetLogits(BufferId buffer, int rows, int64_t vocab);

  // Plans the arena and freezes the program. Buffers never used by an op are dropped from
  // the plan (size 0).
  CompiledGraph Build() &&;

 private:
  CompiledGraph graph_;
  std::vector<int64_t> sizes_;
};

}  // namespace reprise::graph
