// ExecutionContext: the mutable state of one run of a CompiledGraph — the arena memory, the
// inputs (token ids, positions, cache slots) and the binding to a KV cache.
//
// Created once per (graph, request slot) and reused for every call: SetInputs() only copies
// into preallocated arrays, so running a graph allocates nothing. Confined to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "graph/compiled_graph.h"
#include "reprise/types.h"

namespace reprise::graph {

// One layer of an f16 KV cache: K and V each [num_kv_heads][capacity][head_dim] (the layout of
// kernels/attention.h).
struct KvLayerView {
  uint16_t* k = nullptr;
  uint16_t* v = nullptr;
};

// The KV cache a run reads and writes; owned by the caller (the engine's session), which must
// keep it alive and unshared while the run lasts.
struct KvBinding {
  std::span<const KvLayerView> layers;  // [num_layers]
  int64_t capacity = 0;                 // slots per kv head
  int32_t* slot_positions = nullptr;    // [capacity]; position held by each slot, -1 = empty
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
};

// How a recompute run treats a row (ExecutionContext::SetForcedRows).
enum RowMode : uint8_t {
  kRowSelectable = 0,  // recomputed when among the k rows of largest deviation
  kRowForced = 1,      // always recomputed (new tokens, the prompt's last token)
  // A reused row whose nearest context is as it was when cached (only context further back
  // changed, e.g. a chat history that moved): as selectable, but left as cached when its
  // relative deviation is below stable_min_relative_deviation().
  kRowStableContext = 2,
};

// One row of a decode-batch run: the next token of one sequence, at `position` in that
// sequence, written to `slot` of its own KV cache, attending to its first `num_visible_slots`.
struct BatchRow {
  int32_t token = 0;
  int32_t position = 0;
  int32_t slot = 0;
  const KvBinding* kv = nullptr;  // must outlive the run
  int64_t num_visible_slots = 0;
};

// The rows an op runs on and where each lives: the input rows, or after a SelectRowsOp the
// selected ones (compacted).
struct RowSet {
  int num_rows = 0;                    // rows to compute
  int num_valid = 0;                   // rows [0, num_valid) are real tokens; the rest padding
  const int32_t* positions = nullptr;  // [num_rows]
  const int32_t* query_positions = nullptr;  // [num_rows], -1 for padding
  const int32_t* slots = nullptr;            // [num_rows], -1 for padding
  const int32_t* input_rows = nullptr;       // [num_rows] index in the input rows
};

class ExecutionContext {
 public:
  // Allocates the arena and the input arrays for `graph`, which must outlive the context.
  static Result<std::unique_ptr<ExecutionContext>> Create(const CompiledGraph& graph);

  const CompiledGraph& graph() const { return *graph_; }

  // Sets the next run's inputs: token ids, their positions and the cache slot each one is
  // written to. Rows past tokens.size() are padding. `num_visible_slots` is how many leading
  // cache slots attention may read (every slot written by this run must be below it).
  // Errors: InvalidArgument (more tokens than the capacity, sizes differ, a slot or
  // position out of range); nothing is changed then.
  Status SetInputs(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                   std::span<const int32_t> slots, int64_t num_visible_slots);

  // Sets the next run's inputs for a decode-batch graph: row m is `rows[m]`, each reading and
  // writing its own KV cache (BindKv is not used). Errors: InvalidArgument (no rows, more than
  // the capacity, not a decode-batch graph, a token, position or slot out of range, two rows
  // writing the same slot of one cache); nothing is changed then.
  Status SetBatchInputs(std::span<const BatchRow> rows);

  // How a recompute graph treats each row of the last SetInputs (a RowMode per row): rows a
  // recompute graph must select whatever their deviation (new tokens, the prompt's last
  // token) are kRowForced; rows not given are kRowSelectable. Reset by every SetInputs.
  void SetForcedRows(std::span<const uint8_t> modes);

  // Binds the KV cache used by the next runs. Requires: the cache has the model's layer
  // count and dimensions.
  // A query-probe graph's context also sizes its attention scores to the cache here (so
  // that running allocates nothing).
  void BindKv(const KvBinding& kv);

  // Query-aware selection for the next recompute run: row m's attention weight (e.g. from a
  // query probe) is attention[m], and the selection ranks selectable rows by `key` instead of
  // their deviation alone. Forced rows stay forced; the guard and adaptive thresholds still
  // read the deviation. Reset by every SetInputs.
  void SetRowAttention(std::span<const float> attention, TokenSelection key);
  TokenSelection selection_key() const { return selection_key_; }
  const float* row_attention() const { return row_attention_.data(); }
  // [capacity] room for the selection's ranking values.
  float* selection_values() { return selection_values_.data(); }

  // The last query-probe run's attention scores: entry s is the attention paid to cache slot
  // s (see AttentionScoreOp), for the slots before the first probed row. Valid until the
  // next run.
  std::span<const float> attention_scores() const {
    return {attention_scores_.data(), static_cast<size_t>(num_scored_slots_)};
  }
  // For the Executor: [kv capacity] scores, [num_kv_heads][kv capacity] partial sums.
  float* attention_scores_out() { return attention_scores_.data(); }
  float* attention_score_partials() { return attention_score_partials_.data(); }
  void set_num_scored_slots(int64_t n) { num_scored_slots_ = n; }

  // Runs every row (padding included) instead of only the valid ones, as a strictly static
  // backend (NPU) would. Results are the same; time is that of the full capacity.
  void set_strict_shapes(bool strict) { strict_shapes_ = strict; }

  // The logits of the last run: [graph().logits_rows(), vocab]. Valid until the next run.
  std::span<const float> logits() const;

  // The input rows the last recompute run selected, in row order. Valid until the next run.
  std::span<const int32_t> selected_rows() const {
    return {selected_rows_.data(), static_cast<size_t>(num_selected_)};
  }

  // What the last recompute run left unrepaired: the mean, over the reused rows it did not
  // select, of each row's deviation at the check layer relative to the energy of its fresh
  // K (and V), i.e. |fresh - cached|^2 / |fresh|^2. 0 when every reused row was selected or
  // the graph has no check layer. The reuse quality guard (docs/design.md §2) reads it.
  double residual_deviation() const { return residual_deviation_; }

  // Quality guard: a recompute run whose residual deviation exceeds `threshold` stops right
  // after the selection (the check layer), leaving the KV of layers below it fresh and the
  // rest as it was, and reports aborted(); its logits are then not valid. 0 = never (default).
  void set_abort_above(double threshold) { abort_above_ = threshold; }
  double abort_above() const { return abort_above_; }
  // Adaptive recompute: of the rows a recompute run's selection picks (the k of largest
  // deviation), those whose relative deviation (see residual_deviation()) is below this are
  // left as they were, so a run over reused KV that barely changed (a chat history that only
  // moved) recomputes little. Forced rows stay selected, and so does the row of largest
  // deviation, so the selection is never empty. 0 = off: always k rows (default).
  void set_min_relative_deviation(double threshold) { min_relative_deviation_ = threshold; }
  double min_relative_deviation() const { return min_relative_deviation_; }
  // The same for kRowStableContext rows only (the larger of the two applies to them). 0 = off.
  void set_stable_min_relative_deviation(double threshold) {
    stable_min_relative_deviation_ = threshold;
  }
  double stable_min_relative_deviation() const { return stable_min_relative_deviation_; }
  // Whether the last run stopped early (see set_abort_above). Reset by every SetInputs.
  bool aborted() const { return aborted_; }
  void set_aborted() { aborted_ = true; }

  // Access for the Executor.
  uint8_t* buffer(BufferId id) const { return arena_ + graph_->buffers()[id].offset; }
  int num_valid() const { return num_valid_; }
  int num_rows() const { return strict_shapes_ ? graph_->capacity() : num_valid_; }
  const int32_t* tokens() const { return tokens_.data(); }
  const uint8_t* forced() const { return forced_.data(); }
  int64_t num_visible_slots() const { return num_visible_slots_; }
  const KvBinding& kv() const { return kv_; }
  // Whether each row has a KV cache of its own (a decode-batch run), and row m's cache and
  // visible slots (kv() and num_visible_slots() otherwise).
  bool per_row_kv() const { return per_row_kv_; }
  const KvBinding& kv_of_row(int64_t m) const {
    return per_row_kv_ ? *row_kv_[static_cast<size_t>(m)] : kv_;
  }
  int64_t visible_slots_of_row(int64_t m) const {
    return per_row_kv_ ? row_visible_slots_[static_cast<size_t>(m)] : num_visible_slots_;
  }
  // The input rows (phase 0) or the selected rows (phase 1).
  RowSet rows(int phase) const;
  // Makes `rows` (input row indices, ascending) the selected set. Requires: size <= capacity.
  // `rows` may be selection_scratch() itself. With strict shapes the selected phase runs
  // max(rows, static_rows) rows (at most the capacity), as a static graph compiled for
  // `static_rows` selected rows would: the extra ones are padding (no position, no slot).
  void SelectRows(std::span<const int32_t> rows, int static_rows = 0);
  // [capacity] room to compute a selection in without allocating.
  int32_t* selection_scratch() { return selected_rows_.data(); }
  // [capacity] each row's relative deviation (see residual_deviation()), for the Executor.
  float* relative_deviation() { return relative_deviation_.data(); }
  void set_residual_deviation(double value) { residual_deviation_ = value; }

 private:
  explicit ExecutionContext(const CompiledGraph& graph) : graph_(&graph) {}
  // What a run leaves behind (forced rows, the selection, the guard's figures): cleared by
  // every SetInputs / SetBatchInputs.
  void ResetRunState();

  const CompiledGraph* graph_;
  std::unique_ptr<uint8_t, void (*)(void*)> arena_memory_{nullptr, nullptr};
  uint8_t* arena_ = nullptr;
  std::vector<int32_t> tokens_;           // [capacity]
  std::vector<int32_t> positions_;        // [capacity]
  std::vector<int32_t> query_positions_;  // [capacity]
  std::vector<int32_t> slots_;            // [capacity]
  std::vector<int32_t> identity_rows_;    // [capacity] 0, 1, 2, ...
  std::vector<uint8_t> forced_;           // [capacity]
  std::vector<int32_t> selected_rows_;    // [capacity], the first num_selected_ in use
  std::vector<int32_t> selected_positions_;
  std::vector<int32_t> selected_query_positions_;  // -1 for padding rows
  std::vector<int32_t> selected_slots_;
  std::vector<float> relative_deviation_;  // [capacity]
  std::vector<float> row_attention_;       // [capacity]
  std::vector<float> selection_values_;    // [capacity]
  TokenSelection selection_key_ = TokenSelection::kDeviation;
  std::vector<float> attention_scores_;          // [kv capacity] in a query-probe context
  std::vector<float> attention_score_partials_;  // [num_kv_heads * kv capacity]
  int64_t num_scored_slots_ = 0;
  double residual_deviation_ = 0.0;
  double min_relative_deviation_ = 0.0;
  double stable_min_relative_deviation_ = 0.0;
  double abort_above_ = 0.0;
  bool aborted_ = false;
  int num_selected_ = 0;       // selected rows
  int num_selected_rows_ = 0;  // rows the selected phase runs: num_selected_ plus padding
  int num_valid_ = 0;
  int64_t num_visible_slots_ = 0;
  bool strict_shapes_ = false;
  KvBinding kv_;
  bool per_row_kv_ = false;
  std::vector<const KvBinding*> row_kv_;    // [capacity] with per_row_kv_
  std::vector<int64_t> row_visible_slots_;  // [capacity] with per_row_kv_
};

}  // namespace reprise::graph
