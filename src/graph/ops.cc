#include "graph/ops.h"

namespace reprise::graph {
namespace {

struct BufferLister {
  BufferId* ids;
  int& count;
  void Add(BufferId id) {
    if (id != kNoBuffer) ids[count++] = id;
  }
  void operator()(const EmbedOp& op) { Add(op.out); }
  void operator()(const RmsNormOp& op) {
    Add(op.in);
    Add(op.out);
  }
  void operator()(const QuantizeOp& op) {
    Add(op.in);
    Add(op.out);
  }
  void operator()(const MatMulOp& op) {
    Add(op.in);
    Add(op.out);
    Add(op.shadow_in);
  }
  void operator()(const StaticQuantizeOp& op) {
    Add(op.in);
    Add(op.out);
    Add(op.outlier_out);
  }
  void operator()(const ObserveActivationsOp& op) { Add(op.in); }
  void operator()(const QkvPostOp& op) { Add(op.qkv); }
  void operator()(const StoreKvOp& op) { Add(op.qkv); }
  void operator()(const DeviationOp& op) {
    Add(op.qkv);
    Add(op.out);
  }
  void operator()(const SelectRowsOp& op) { Add(op.deviation); }
  void operator()(const AttentionScoreOp& op) { Add(op.qkv); }
  void operator()(const GatherRowsOp& op) {
    Add(op.in);
    Add(op.out);
  }
  void operator()(const AttentionOp& op) {
    Add(op.qkv);
    Add(op.out);
  }
  void operator()(const SwiGluOp& op) {
    Add(op.gate_up);
    Add(op.out);
  }
  void operator()(const SelectRowOp& op) {
    Add(op.in);
    Add(op.out);
  }
};

struct Namer {
  const char* operator()(const EmbedOp&) { return "embed"; }
  const char* operator()(const RmsNormOp& op) { return op.quantize_out ? "rmsnorm+q8" : "rmsnorm"; }
  const char* operator()(const QuantizeOp&) { return "quantize"; }
  const char* operator()(const MatMulOp& op) {
    if (op.shadow != nullptr) return op.accumulate ? "matmul_i8+shadow+=" : "matmul_i8+shadow";
    return op.accumulate ? "matmul+=" : "matmul";
  }
  const char* operator()(const StaticQuantizeOp& op) {
    return op.num_outliers > 0 ? "static_quantize+outliers" : "static_quantize";
  }
  const char* operator()(const ObserveActivationsOp&) { return "observe_activations"; }
  const char* operator()(const QkvPostOp& op) {
    return op.store_kv ? "qkv_post+store" : "qkv_post";
  }
  const char* operator()(const StoreKvOp&) { return "store_kv"; }
  const char* operator()(const DeviationOp&) { return "kv_deviation"; }
  const char* operator()(const SelectRowsOp&) { return "select_top_k"; }
  const char* operator()(const AttentionScoreOp&) { return "attention_scores"; }
  const char* operator()(const GatherRowsOp&) { return "gather_rows"; }
  const char* operator()(const AttentionOp&) { return "attention"; }
  const char* operator()(const SwiGluOp& op) { return op.quantize_out ? "swiglu+q8" : "swiglu"; }
  const char* operator()(const SelectRowOp&) { return "select_last_row"; }
};

}  // namespace

void OpBuffers(const Op& op, BufferId out_ids[4], int& count) {
  count = 0;
  std::visit(BufferLister{out_ids, count}, op);
}

const char* OpName(const Op& op) { return std::visit(Namer{}, op); }

}  // namespace reprise::graph
