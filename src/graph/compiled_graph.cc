#include "graph/compiled_graph.h"

#include <cstdio>

#include "base/check.h"

namespace reprise::graph {

const char* GraphKindName(GraphKind kind) {
  switch (kind) {
    case GraphKind::kPrefill:
      return "prefill";
    case GraphKind::kDecode:
      return "decode";
    case GraphKind::kRecompute:
      return "recompute";
    case GraphKind::kDecodeBatch:
      return "decode-batch";
    case GraphKind::kQueryProbe:
      return "query-probe";
  }
  return "?";
}

GraphBuilder::GraphBuilder(GraphKind kind, int capacity, int num_layers) {
  REPRISE_CHECK(capacity > 0 && num_layers > 0);
  graph_.kind_ = kind;
  graph_.capacity_ = capacity;
  graph_.num_layers_ = num_layers;
  graph_.shards_.push_back(Shard{0, 0, 0, num_layers});
}

BufferId GraphBuilder::NewBuffer(std::string name, int64_t size_bytes) {
  REPRISE_CHECK(size_bytes >= 0);
  graph_.buffers_.push_back(BufferInfo{std::move(name), size_bytes, 0});
  sizes_.push_back(size_bytes);
  return static_cast<BufferId>(graph_.buffers_.size() - 1);
}

void GraphBuilder::Add(Op op) {
  if (std::holds_alternative<SelectRowOp>(op) && graph_.first_single_row_op_ == 0) {
    graph_.first_single_row_op_ = static_cast<int>(graph_.ops_.size()) + 1;
  }
  if (std::holds_alternative<SelectRowsOp>(op) && graph_.first_selected_op_ == 0) {
    graph_.first_selected_op_ = static_cast<int>(graph_.ops_.size()) + 1;
  }
  graph_.ops_.push_back(std::move(op));
}

void GraphBuilder::BeginShard(int first_layer) {
  Shard& current = graph_.shards_.back();
  current.end_op = static_cast<int>(graph_.ops_.size());
  current.end_layer = first_layer;
  graph_.shards_.push_back(Shard{current.end_op, current.end_op, first_layer, graph_.num_layers_});
}

void GraphBuilder::SetLogits(BufferId buffer, int rows, int64_t vocab) {
  graph_.logits_buffer_ = buffer;
  graph_.logits_rows_ = rows;
  graph_.vocab_size_ = vocab;
}

CompiledGraph GraphBuilder::Build() && {
  const int num_ops = static_cast<int>(graph_.ops_.size());
  graph_.shards_.back().end_op = num_ops;
  if (graph_.first_single_row_op_ == 0) graph_.first_single_row_op_ = num_ops;
  if (graph_.first_selected_op_ == 0) graph_.first_selected_op_ = num_ops;
  std::vector<BufferRequest> requests(graph_.buffers_.size());
  std::vector<bool> used(graph_.buffers_.size(), false);
  for (size_t b = 0; b < requests.size(); ++b) {
    requests[b].name = graph_.buffers_[b].name;
    requests[b].size_bytes = graph_.buffers_[b].size_bytes;
    requests[b].first_op = num_ops;
    requests[b].last_op = 0;
  }
  for (int i = 0; i < num_ops; ++i) {
    BufferId ids[4];
    int count;
    OpBuffers(graph_.ops_[static_cast<size_t>(i)], ids, count);
    for (int j = 0; j < count; ++j) {
      BufferRequest& r = requests[static_cast<size_t>(ids[j])];
      r.first_op = std::min(r.first_op, i);
      r.last_op = std::max(r.last_op, i);
      used[static_cast<size_t>(ids[j])] = true;
    }
  }
  // The logits outlive the run; buffers nobody uses take no space.
  if (graph_.logits_buffer_ != kNoBuffer) {
    requests[static_cast<size_t>(graph_.logits_buffer_)].last_op = num_ops;
  }
  for (size_t b = 0; b < requests.size(); ++b) {
    if (!used[b]) {
      requests[b].size_bytes = 0;
      requests[b].first_op = requests[b].last_op = 0;
      graph_.buffers_[b].size_bytes = 0;
    }
  }
  ArenaPlan plan = PlanArena(requests);
  REPRISE_DCHECK(IsValidPlan(requests, plan));
  for (size_t b = 0; b < requests.size(); ++b) graph_.buffers_[b].offset = plan.offsets[b];
  graph_.arena_bytes_ = plan.arena_bytes;
  return std::move(graph_);
}

std::string CompiledGraph::Dump() const {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof(line), "%s graph, capacity %d, %zu ops, %zu shards, arena %.2f MiB\n",
                GraphKindName(kind_), capacity_, ops_.size(), shards_.size(),
                arena_bytes_ / 1048576.0);
  s += line;
  for (size_t i = 0; i < ops_.size(); ++i) {
    BufferId ids[4];
    int count;
    OpBuffers(ops_[i], ids, count);
    std::snprintf(line, sizeof(line), "  %4zu %-16s", i, OpName(ops_[i]));
    s += line;
    for (int j = 0; j < count; ++j) {
      s += " " + buffers_[static_cast<size_t>(ids[j])].name;
    }
    s += "\n";
  }
  return s;
}

}  // namespace reprise::graph
