#include "graph/execution_context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace reprise::graph {

Result<std::unique_ptr<ExecutionContext>> ExecutionContext::Create(const CompiledGraph& graph) {
  std::unique_ptr<ExecutionContext> context(new ExecutionContext(graph));
  const size_t bytes = static_cast<size_t>((graph.arena_bytes() + kArenaAlignment - 1) /
                                           kArenaAlignment * kArenaAlignment);
  void* memory = std::aligned_alloc(kArenaAlignment, std::max<size_t>(bytes, kArenaAlignment));
  if (memory == nullptr) {
    return ResourceExhaustedError("cannot allocate a " + std::to_string(bytes) +
                                  "-byte arena for the " + GraphKindName(graph.kind()) + " graph");
  }
  std::memset(memory, 0, bytes);
  context->arena_memory_ =
      std::unique_ptr<uint8_t, void (*)(void*)>(static_cast<uint8_t*>(memory), std::free);
  context->arena_ = static_cast<uint8_t*>(memory);
  const size_t capacity = static_cast<size_t>(graph.capacity());
  context->tokens_.assign(capacity, 0);
  context->positions_.assign(capacity, 0);
  context->query_positions_.assign(capacity, -1);
  context->slots_.assign(capacity, 0);
  context->identity_rows_.resize(capacity);
  for (size_t i = 0; i < capacity; ++i) context->identity_rows_[i] = static_cast<int32_t>(i);
  context->forced_.assign(capacity, 0);
  context->selected_rows_.assign(capacity, 0);
  context->selected_positions_.assign(capacity, 0);
  context->selected_query_positions_.assign(capacity, -1);
  context->selected_slots_.assign(capacity, 0);
  context->relative_deviation_.assign(capacity, 0.0f);
  context->row_attention_.assign(capacity, 0.0f);
  context->selection_values_.assign(capacity, 0.0f);
  if (graph.kind() == GraphKind::kDecodeBatch) {
    context->row_kv_.assign(capacity, nullptr);
    context->row_visible_slots_.assign(capacity, 0);
  }
  return context;
}

Status ExecutionContext::SetInputs(std::span<const int32_t> tokens,
                                   std::span<const int32_t> positions,
                                   std::span<const int32_t> slots, int64_t num_visible_slots) {
  const size_t capacity = static_cast<size_t>(graph_->capacity());
  if (tokens.empty() || tokens.size() > capacity) {
    return InvalidArgumentError(std::to_string(tokens.size()) + " tokens for a graph of " +
                                std::to_string(capacity));
  }
  if (positions.size() != tokens.size() || slots.size() != tokens.size()) {
    return InvalidArgumentError("tokens, positions and slots differ in length");
  }
  if (num_visible_slots < 0 || num_visible_slots > kv_.capacity) {
    return InvalidArgumentError("visible slots out of the cache's range");
  }
  const int64_t vocab = graph_->vocab_size();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || (vocab > 0 && tokens[i] >= vocab)) {
      return InvalidArgumentError("token id " + std::to_string(tokens[i]) +
                                  " outside the vocabulary of " + std::to_string(vocab));
    }
    if (positions[i] < 0) return InvalidArgumentError("negative position");
    if (slots[i] < 0 || slots[i] >= num_visible_slots) {
      return InvalidArgumentError("slot " + std::to_string(slots[i]) +
                                  " outside the visible cache (" +
                                  std::to_string(num_visible_slots) + " slots)");
    }
  }
  num_valid_ = static_cast<int>(tokens.size());
  std::copy(tokens.begin(), tokens.end(), tokens_.begin());
  std::copy(positions.begin(), positions.end(), positions_.begin());
  std::copy(positions.begin(), positions.end(), query_positions_.begin());
  std::copy(slots.begin(), slots.end(), slots_.begin());
  // Padding rows: a harmless token, no position (masked), and no slot of their own.
  for (size_t i = tokens.size(); i < capacity; ++i) {
    tokens_[i] = tokens_[0];
    positions_[i] = positions_[0];
    query_positions_[i] = -1;
    slots_[i] = -1;
  }
  num_visible_slots_ = num_visible_slots;
  per_row_kv_ = false;
  ResetRunState();
  return Status::Ok();
}

void ExecutionContext::ResetRunState() {
  std::fill(forced_.begin(), forced_.end(), 0);
  num_selected_ = 0;
  num_selected_rows_ = 0;
  selection_key_ = TokenSelection::kDeviation;
  num_scored_slots_ = 0;
  residual_deviation_ = 0.0;
  aborted_ = false;
}

Status ExecutionContext::SetBatchInputs(std::span<const BatchRow> rows) {
  const size_t capacity = static_cast<size_t>(graph_->capacity());
  if (graph_->kind() != GraphKind::kDecodeBatch) {
    return InvalidArgumentError(std::string("batch inputs for a ") + GraphKindName(graph_->kind()) +
                                " graph");
  }
  if (rows.empty() || rows.size() > capacity) {
    return InvalidArgumentError(std::to_string(rows.size()) + " rows for a decode batch of " +
                                std::to_string(capacity));
  }
  const int64_t vocab = graph_->vocab_size();
  for (size_t i = 0; i < rows.size(); ++i) {
    const BatchRow& r = rows[i];
    if (r.kv == nullptr || static_cast<int>(r.kv->layers.size()) != graph_->num_layers()) {
      return InvalidArgumentError("batch row " + std::to_string(i) + " has no KV cache bound");
    }
    if (r.token < 0 || (vocab > 0 && r.token >= vocab)) {
      return InvalidArgumentError("token id " + std::to_string(r.token) +
                                  " outside the vocabulary of " + std::to_string(vocab));
    }
    if (r.position < 0) return InvalidArgumentError("negative position");
    if (r.num_visible_slots < 0 || r.num_visible_slots > r.kv->capacity || r.slot < 0 ||
        r.slot >= r.num_visible_slots) {
      return InvalidArgumentError("slot " + std::to_string(r.slot) +
                                  " outside the visible cache (" +
                                  std::to_string(r.num_visible_slots) + " slots)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (rows[j].kv->slot_positions == r.kv->slot_positions && rows[j].slot == r.slot) {
        return InvalidArgumentError("two batch rows write slot " + std::to_string(r.slot) +
                                    " of one cache");
      }
    }
  }
  num_valid_ = static_cast<int>(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    tokens_[i] = rows[i].token;
    positions_[i] = rows[i].position;
    query_positions_[i] = rows[i].position;
    slots_[i] = rows[i].slot;
    row_kv_[i] = rows[i].kv;
    row_visible_slots_[i] = rows[i].num_visible_slots;
  }
  for (size_t i = rows.size(); i < capacity; ++i) {
    tokens_[i] = tokens_[0];
    positions_[i] = positions_[0];
    query_positions_[i] = -1;
    slots_[i] = -1;
    row_kv_[i] = rows[0].kv;
    row_visible_slots_[i] = 0;
  }
  per_row_kv_ = true;
  num_visible_slots_ = 0;
  ResetRunState();
  return Status::Ok();
}

void ExecutionContext::SetForcedRows(std::span<const uint8_t> forced) {
  const size_t n = std::min(forced.size(), static_cast<size_t>(num_valid_));
  std::copy(forced.begin(), forced.begin() + static_cast<long>(n), forced_.begin());
}

void ExecutionContext::BindKv(const KvBinding& kv) {
  kv_ = kv;
  if (graph_->kind() == GraphKind::kQueryProbe) {
    attention_scores_.assign(static_cast<size_t>(kv.capacity), 0.0f);
    attention_score_partials_.assign(static_cast<size_t>(kv.capacity * kv.num_kv_heads), 0.0f);
  }
}

void ExecutionContext::SetRowAttention(std::span<const float> attention, TokenSelection key) {
  const size_t n = std::min(attention.size(), static_cast<size_t>(num_valid_));
  std::copy(attention.begin(), attention.begin() + static_cast<long>(n), row_attention_.begin());
  std::fill(row_attention_.begin() + static_cast<long>(n), row_attention_.end(), 0.0f);
  selection_key_ = key;
}

RowSet ExecutionContext::rows(int phase) const {
  if (phase == 0) {
    return RowSet{num_rows(),    num_valid_,           positions_.data(), query_positions_.data(),
                  slots_.data(), identity_rows_.data()};
  }
  return RowSet{num_selected_rows_,         num_selected_,
                selected_positions_.data(), selected_query_positions_.data(),
                selected_slots_.data(),     selected_rows_.data()};
}

void ExecutionContext::SelectRows(std::span<const int32_t> rows, int static_rows) {
  num_selected_ = static_cast<int>(rows.size());
  for (size_t j = 0; j < rows.size(); ++j) {
    const int32_t r = rows[j];
    selected_rows_[j] = r;
    selected_positions_[j] = positions_[static_cast<size_t>(r)];
    selected_query_positions_[j] = positions_[static_cast<size_t>(r)];
    selected_slots_[j] = slots_[static_cast<size_t>(r)];
  }
  num_selected_rows_ = num_selected_;
  if (strict_shapes_) {
    num_selected_rows_ = std::min(graph_->capacity(), std::max(num_selected_, static_rows));
    // Padding: a harmless input row, masked from attention, writing no KV.
    const int32_t pad_row = num_selected_ > 0 ? selected_rows_[0] : 0;
    for (int j = num_selected_; j < num_selected_rows_; ++j) {
      selected_rows_[static_cast<size_t>(j)] = pad_row;
      selected_positions_[static_cast<size_t>(j)] = positions_[static_cast<size_t>(pad_row)];
      selected_query_positions_[static_cast<size_t>(j)] = -1;
      selected_slots_[static_cast<size_t>(j)] = -1;
    }
  }
}

std::span<const float> ExecutionContext::logits() const {
  if (graph_->logits_buffer() == kNoBuffer) return {};
  const float* data = reinterpret_cast<const float*>(buffer(graph_->logits_buffer()));
  return {data, static_cast<size_t>(graph_->logits_rows() * graph_->vocab_size())};
}

}  // namespace reprise::graph
