#include "engine/graph_backend.h"

#include <algorithm>

#include "base/check.h"
#include "base/logging.h"
#include "base/memory_usage.h"
#include "base/mutex.h"
#include "graph/subgraph_scheduler.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul_scratch.h"

namespace reprise::engine {

Result<std::unique_ptr<GraphBackend>> GraphBackend::Create(const LoadedModel& model,
                                                           const GraphBackendOptions& options) {
  CompiledModelOptions compiled_options;
  compiled_options.num_threads = options.num_threads;
  compiled_options.scalar_kernels = options.scalar_kernels;
  compiled_options.pack = options.pack;
  compiled_options.calibration_dir = options.calibration_dir;
  compiled_options.shared_weights = options.shared_weights;
  compiled_options.shared_pool = options.shared_pool;
  REPRISE_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledModel> compiled,
                           CompiledModel::Create(model, compiled_options));
  return Create(std::move(compiled), options);
}

Result<std::unique_ptr<GraphBackend>> GraphBackend::Create(
    std::shared_ptr<const CompiledModel> compiled, const GraphBackendOptions& options) {
  if (!compiled) return InvalidArgumentError("no compiled model");
  if (options.context_tokens <= 0) return InvalidArgumentError("context size must be positive");
  if (options.prefill_capacity <= 0) {
    return InvalidArgumentError("prefill capacity must be positive");
  }
  std::unique_ptr<GraphBackend> b(new GraphBackend());
  b->compiled_ = std::move(compiled);
  const CompiledModel& m = *b->compiled_;
  const int prefill_capacity = std::min(options.prefill_capacity, options.context_tokens);
  REPRISE_ASSIGN_OR_RETURN(b->prefill_, m.PrefillGraph(prefill_capacity));
  REPRISE_ASSIGN_OR_RETURN(b->decode_, m.DecodeGraph());
  REPRISE_ASSIGN_OR_RETURN(b->prefill_context_, graph::ExecutionContext::Create(*b->prefill_));
  REPRISE_ASSIGN_OR_RETURN(b->decode_context_, graph::ExecutionContext::Create(*b->decode_));
  b->prefill_context_->set_strict_shapes(options.strict_shapes);
  if (options.recompute_capacity > 0) {
    RecomputeGraphSpec spec;
    spec.capacity = std::min(options.recompute_capacity, options.context_tokens);
    spec.ratio = options.recompute_ratio;
    spec.check_layer = options.check_layer;
    spec.deviation_includes_v = options.deviation_includes_v;
    spec.refresh_check_layer = options.refresh_check_layer;
    REPRISE_ASSIGN_OR_RETURN(b->recompute_, m.RecomputeGraph(spec));
    REPRISE_ASSIGN_OR_RETURN(b->recompute_context_,
                             graph::ExecutionContext::Create(*b->recompute_));
    b->recompute_context_->set_strict_shapes(options.strict_shapes);
    b->recompute_context_->set_abort_above(options.guard_deviation);
    b->recompute_context_->set_min_relative_deviation(options.recompute_min_deviation);
    b->recompute_context_->set_stable_min_relative_deviation(options.stable_min_deviation);
  }
  if (options.query_probe_capacity > 0) {
    REPRISE_ASSIGN_OR_RETURN(
        b->probe_, m.QueryProbeGraph(std::min(options.query_probe_capacity, options.context_tokens),
                                     options.check_layer));
    b->probe_end_layer_ = options.check_layer + 1;
    REPRISE_ASSIGN_OR_RETURN(b->probe_context_, graph::ExecutionContext::Create(*b->probe_));
    b->probe_context_->set_strict_shapes(options.strict_shapes);
  }
  const model::ModelConfig& c = m.config();
  REPRISE_ASSIGN_OR_RETURN(
      b->kv_, kv::KvCache::Create(
                  kv::KvShape{c.num_layers, c.num_kv_heads, c.head_dim, options.context_tokens}));
  for (int l = 0; l < c.num_layers; ++l) {
    b->kv_layers_.push_back(graph::KvLayerView{b->kv_->k(l), b->kv_->v(l)});
  }
  b->kv_binding_ = graph::KvBinding{b->kv_layers_, options.context_tokens,
                                    b->kv_->slot_positions().data(), c.num_kv_heads, c.head_dim};
  b->prefill_context_->BindKv(b->kv_binding_);
  b->decode_context_->BindKv(b->kv_binding_);
  if (b->recompute_context_) b->recompute_context_->BindKv(b->kv_binding_);
  if (b->probe_context_) b->probe_context_->BindKv(b->kv_binding_);
  if (options.decode_batcher != nullptr) {
    b->decode_batcher_ = options.decode_batcher;
    b->batch_logits_.resize(static_cast<size_t>(c.vocab_size));
  }
  b->executor_ = std::make_unique<graph::Executor>(m.pool(), m.kernels());
  if (options.out_of_order_groups > 1) {
    if (options.out_of_order_window < 1 || options.out_of_order_groups > 64) {
      return InvalidArgumentError("out-of-order: 2-64 worker groups and a window of at least 1");
    }
    b->out_of_order_window_ = options.out_of_order_window;
    for (int i = 0; i < options.out_of_order_window; ++i) {
      REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<graph::ExecutionContext> context,
                               graph::ExecutionContext::Create(*b->prefill_));
      context->set_strict_shapes(options.strict_shapes);
      context->BindKv(b->kv_binding_);
      b->out_of_order_contexts_.push_back(std::move(context));
    }
    const int threads = m.pool().num_threads();
    for (int g = 0; g < options.out_of_order_groups; ++g) {
      // The threads split as evenly as they go; every group has at least one.
      const int share = std::max(1, threads / options.out_of_order_groups +
                                        (g < threads % options.out_of_order_groups ? 1 : 0));
      REPRISE_ASSIGN_OR_RETURN(
          std::unique_ptr<ThreadPool> pool,
          ThreadPool::Create(
              {.num_threads = share, .thread_start = kernels::ReserveThreadMatMulScratch}));
      b->group_executors_.push_back(std::make_unique<graph::Executor>(*pool, m.kernels()));
      b->group_pools_.push_back(std::move(pool));
    }
  }
  b->positions_scratch_.resize(static_cast<size_t>(options.context_tokens));
  b->slots_scratch_.resize(static_cast<size_t>(options.context_tokens));
  REPRISE_LOG(kDebug) << "session ready: arenas " << b->prefill_->arena_bytes() / 1048576.0 << " + "
                      << b->decode_->arena_bytes() / 1048576.0 << " MiB; resident "
                      << CurrentRssMb() << " MiB";
  b->name_ = std::string("cpu-graphs/") + m.kernels().name + ", prefill " +
             std::to_string(prefill_capacity) + ", " + std::to_string(m.pool().num_threads()) +
             " threads";
  return b;
}

Status GraphBackend::RunCall(graph::ExecutionContext& context, std::span<const int32_t> tokens,
                             std::span<const int32_t> positions, std::span<const int32_t> slots,
                             std::span<const uint8_t> forced, int64_t num_visible_slots,
                             std::span<const float> row_attention, TokenSelection key) {
  REPRISE_RETURN_IF_ERROR(context.SetInputs(tokens, positions, slots, num_visible_slots));
  if (!forced.empty()) context.SetForcedRows(forced);
  if (key != TokenSelection::kDeviation) context.SetRowAttention(row_attention, key);
  if (!shard_gate_) {
    executor_->Run(context);
  } else {
    const std::vector<graph::Shard>& shards = context.graph().shards();
    for (size_t s = 0; s < shards.size(); ++s) {
      if (!shard_gate_(shards[s].end_layer)) {
        return UnavailableError("the KV a graph shard attends to could not be placed");
      }
      executor_->Run(context, static_cast<int>(s), static_cast<int>(s) + 1);
      if (context.aborted()) break;  // the quality guard stopped a recompute call
    }
  }
  ++num_graph_calls_;
  last_logits_ = context.logits();
  return Status::Ok();
}

std::vector<int> GraphBackend::shard_first_layers() const {
  std::vector<int> layers;
  for (size_t s = 1; s < prefill_->shards().size(); ++s) {
    layers.push_back(prefill_->shards()[s].first_layer);
  }
  return layers;
}

Status GraphBackend::CheckTokens(std::span<const int32_t> tokens) const {
  if (tokens.empty()) return InvalidArgumentError("no tokens to run");
  const int vocab = config().vocab_size;
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      return InvalidArgumentError("token id " + std::to_string(t) + " outside the vocabulary");
    }
  }
  return Status::Ok();
}

Status GraphBackend::RunPrefill(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                std::span<const int32_t> slots, int num_tokens_after) {
  REPRISE_RETURN_IF_ERROR(CheckTokens(tokens));
  if (num_tokens_after > capacity_tokens()) return InvalidArgumentError("context overflow");
  graph::ExecutionContext& context = tokens.size() == 1 ? *decode_context_ : *prefill_context_;
  const size_t capacity = static_cast<size_t>(context.graph().capacity());
  if (!group_executors_.empty() && !shard_gate_ && tokens.size() > capacity) {
    bool consecutive = true;
    for (size_t i = 1; i < slots.size() && consecutive; ++i)
      consecutive = slots[i] == slots[i - 1] + 1;
    if (consecutive) {
      REPRISE_RETURN_IF_ERROR(RunPrefillOutOfOrder(tokens, positions, slots));
      num_tokens_ = num_tokens_after;
      return Status::Ok();
    }
  }
  for (size_t begin = 0; begin < tokens.size(); begin += capacity) {
    if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
      return CancelledError("the request was cancelled");
    }
    const size_t n = std::min(capacity, tokens.size() - begin);
    REPRISE_RETURN_IF_ERROR(RunCall(context, tokens.subspan(begin, n), positions.subspan(begin, n),
                                    slots.subspan(begin, n), {}, num_tokens_after));
  }
  num_tokens_ = num_tokens_after;
  return Status::Ok();
}

// Each call's subgraphs run on its own context; a call sees the slots up to its own last one
// (the later calls' slots are masked from it by position anyway, and are being written).
Status GraphBackend::RunPrefillOutOfOrder(std::span<const int32_t> tokens,
                                          std::span<const int32_t> positions,
                                          std::span<const int32_t> slots) {
  const size_t capacity = static_cast<size_t>(prefill_->capacity());
  const int num_calls = static_cast<int>((tokens.size() + capacity - 1) / capacity);
  const int num_shards = static_cast<int>(prefill_->shards().size());
  graph::SubgraphSchedulerOptions options;
  options.num_workers = static_cast<int>(group_executors_.size());
  options.window = out_of_order_window_;
  Status failure = Status::Ok();
  Mutex failure_mutex;
  const bool ok = graph::RunOutOfOrder(
      num_calls, num_shards, options, [&](const graph::Subgraph& g, int worker) {
        graph::ExecutionContext& context =
            *out_of_order_contexts_[static_cast<size_t>(g.chunk % out_of_order_window_)];
        if (g.shard == 0) {
          Status status = Status::Ok();
          if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
            status = CancelledError("the request was cancelled");
          } else {
            const size_t begin = static_cast<size_t>(g.chunk) * capacity;
            const size_t n = std::min(capacity, tokens.size() - begin);
            status = context.SetInputs(tokens.subspan(begin, n), positions.subspan(begin, n),
                                       slots.subspan(begin, n), slots[begin + n - 1] + 1);
          }
          if (!status.ok()) {
            MutexLock lock(failure_mutex);
            failure = status;
            return false;
          }
        }
        group_executors_[static_cast<size_t>(worker)]->Run(context, g.shard, g.shard + 1);
        return true;
      });
  if (!ok) return failure;
  num_graph_calls_ += num_calls;
  last_logits_ =
      out_of_order_contexts_[static_cast<size_t>((num_calls - 1) % out_of_order_window_)]->logits();
  return Status::Ok();
}

Result<std::span<const int32_t>> GraphBackend::RunRecompute(
    std::span<const int32_t> tokens, std::span<const int32_t> positions,
    std::span<const int32_t> slots, std::span<const uint8_t> forced, int num_tokens_after,
    std::span<const float> row_attention, TokenSelection key) {
  if (!recompute_) return InvalidArgumentError("no recompute graph was compiled");
  REPRISE_RETURN_IF_ERROR(CheckTokens(tokens));
  if (tokens.size() > static_cast<size_t>(recompute_->capacity())) {
    return InvalidArgumentError(std::to_string(tokens.size()) +
                                " tokens exceed the recompute graph's capacity of " +
                                std::to_string(recompute_->capacity()));
  }
  if (num_tokens_after > capacity_tokens()) return InvalidArgumentError("context overflow");
  if (key != TokenSelection::kDeviation && row_attention.size() != tokens.size()) {
    return InvalidArgumentError("query-aware selection needs an attention weight per token");
  }
  REPRISE_RETURN_IF_ERROR(RunCall(*recompute_context_, tokens, positions, slots, forced,
                                  num_tokens_after, row_attention, key));
  num_tokens_ = num_tokens_after;
  return recompute_context_->selected_rows();
}

Result<std::span<const float>> GraphBackend::RunQueryProbe(std::span<const int32_t> tokens,
                                                           std::span<const int32_t> positions,
                                                           std::span<const int32_t> slots,
                                                           int64_t num_visible_slots) {
  if (!probe_) return InvalidArgumentError("no query probe graph was compiled");
  REPRISE_RETURN_IF_ERROR(CheckTokens(tokens));
  if (tokens.size() > static_cast<size_t>(probe_->capacity())) {
    return InvalidArgumentError(std::to_string(tokens.size()) +
                                " tokens exceed the query probe's capacity of " +
                                std::to_string(probe_->capacity()));
  }
  if (num_visible_slots > capacity_tokens()) return InvalidArgumentError("context overflow");
  REPRISE_RETURN_IF_ERROR(probe_context_->SetInputs(tokens, positions, slots, num_visible_slots));
  if (shard_gate_ && !shard_gate_(probe_end_layer_)) {
    return UnavailableError("the KV the query probe attends to could not be placed");
  }
  executor_->Run(*probe_context_);
  ++num_graph_calls_;
  return probe_context_->attention_scores();
}

double GraphBackend::last_residual_deviation() const {
  return recompute_context_ ? recompute_context_->residual_deviation() : 0.0;
}

bool GraphBackend::last_recompute_aborted() const {
  return recompute_context_ && recompute_context_->aborted();
}

void GraphBackend::SetNumTokens(int num_tokens) {
  REPRISE_CHECK(num_tokens >= 0 && num_tokens <= capacity_tokens());
  num_tokens_ = num_tokens;
}

Result<std::span<const float>> GraphBackend::Append(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgumentError("no tokens to run");
  if (num_tokens_ + static_cast<int64_t>(tokens.size()) > capacity_tokens()) {
    return InvalidArgumentError(std::to_string(tokens.size()) + " more tokens do not fit in the " +
                                std::to_string(capacity_tokens()) + "-token context (" +
                                std::to_string(num_tokens_) + " used)");
  }
  if (tokens.size() == 1 && decode_batcher_ != nullptr) {
    // A decode step, batched with the other sessions' (the checks first: a row the batch
    // graph refused would fail the whole batch).
    REPRISE_RETURN_IF_ERROR(CheckTokens(tokens));
    if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
      return CancelledError("the request was cancelled");
    }
    const graph::BatchRow row{tokens[0], num_tokens_, num_tokens_, &kv_binding_, num_tokens_ + 1};
    REPRISE_RETURN_IF_ERROR(decode_batcher_->Step(row, batch_logits_));
    num_tokens_ += 1;
    last_logits_ = batch_logits_;
    return last_logits_;
  }
  const size_t n = tokens.size();
  for (size_t i = 0; i < n; ++i) {
    positions_scratch_[i] = num_tokens_ + static_cast<int32_t>(i);
    slots_scratch_[i] = num_tokens_ + static_cast<int32_t>(i);
  }
  REPRISE_RETURN_IF_ERROR(RunPrefill(tokens, std::span<const int32_t>(positions_scratch_.data(), n),
                                     std::span<const int32_t>(slots_scratch_.data(), n),
                                     num_tokens_ + static_cast<int>(n)));
  return last_logits_;
}

void GraphBackend::Truncate(int num_tokens) {
  REPRISE_CHECK(num_tokens >= 0 && num_tokens <= num_tokens_);
  num_tokens_ = num_tokens;
  kv_->ClearFrom(num_tokens);
}

}  // namespace reprise::engine
