#include "engine/reuse_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/check.h"
#include "base/logging.h"
#include "engine/kv_transfer.h"
#include "reuse/stable_context.h"

namespace reprise::engine {
namespace {

using reuse::TokenKind;

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

// What a graph call costs beyond its rows (its operators' synchronisation, the last row's
// logits), as rows through every layer: the intercept of latency against capacity that
// `reprise calibrate` measures (docs/benchmarks.md, "Figures behind constants in the code").
constexpr double kCallOverheadRows = 4.0;

GraphCosts UncalibratedGraphCosts(const model::ModelConfig& config, int check_layer,
                                  int prefill_capacity, int recompute_capacity,
                                  double recompute_ratio) {
  const int layers = std::max(1, config.num_layers);
  const double dim = config.embedding_dim;
  const double qkv = dim * (config.q_dim() + 2.0 * config.kv_dim());      // Q, K and V
  const double rest = dim * config.q_dim() + 3.0 * dim * config.ffn_dim;  // O and the MLP
  const double layer = std::max(1.0, qkv + rest);
  const int check = std::clamp(check_layer, 0, layers - 1);
  const double selected = std::ceil(std::clamp(recompute_ratio, 0.0, 1.0) * recompute_capacity);
  const double per_call = kCallOverheadRows * layers * layer;
  GraphCosts costs;
  costs.prefill = per_call + static_cast<double>(prefill_capacity) * layers * layer;
  costs.recompute = per_call + recompute_capacity * (check * layer + qkv) +
                    selected * (rest + (layers - check - 1) * layer);
  return costs;
}

Result<std::unique_ptr<ReuseSession>> ReuseSession::Create(const LoadedModel& model,
                                                           const ReuseOptions& options,
                                                           kv::ChunkCache* cache) {
  if (options.method != ReuseMethod::kNone && cache == nullptr) {
    return InvalidArgumentError("reuse needs a chunk cache");
  }
  if (options.chunk_tokens < 1) return InvalidArgumentError("chunk size must be >= 1");
  if (options.force_first_tokens < 0) return InvalidArgumentError("force_first_tokens < 0");
  if (!(options.guard_deviation >= 0) && options.guard_deviation != kGuardCalibrated) {
    return InvalidArgumentError("guard deviation < 0");
  }
  if (!(options.recompute_min_deviation >= 0 && options.recompute_min_deviation <= 1) ||
      !(options.stable_min_deviation >= 0 && options.stable_min_deviation <= 1)) {
    return InvalidArgumentError("the adaptive recompute threshold must be in [0, 1]");
  }
  if (options.query_probe_tokens < 1 || options.query_probe_tokens > graph::kMaxProbeRows) {
    return InvalidArgumentError("query probe tokens must be in [1, " +
                                std::to_string(graph::kMaxProbeRows) + "]");
  }
  if (options.stable_context_tokens < 1) {
    return InvalidArgumentError("stable context tokens must be >= 1");
  }
  if (options.stable_repair_tokens < 0) {
    return InvalidArgumentError("stable repair tokens must be >= 0");
  }
  std::unique_ptr<ReuseSession> s(new ReuseSession(model, options, cache));
  GraphBackendOptions graph_options;
  graph_options.context_tokens = options.context_tokens;
  graph_options.num_threads = options.num_threads;
  graph_options.prefill_capacity = options.prefill_capacity;
  graph_options.shared_weights = options.shared_weights;
  graph_options.shared_pool = options.shared_pool;
  graph_options.pack = options.pack;
  graph_options.calibration_dir = options.calibration_dir;
  graph_options.decode_batcher = options.decode_batcher;
  graph_options.strict_shapes = options.static_shapes;
  graph_options.out_of_order_groups = options.out_of_order_groups;
  graph_options.out_of_order_window = options.out_of_order_window;
  if (options.method == ReuseMethod::kBlend) {
    graph_options.recompute_capacity = options.recompute_capacity;
    graph_options.recompute_ratio = options.recompute_ratio;
    graph_options.check_layer = std::min(options.check_layer, model.config().num_layers - 1);
    graph_options.deviation_includes_v = options.deviation_includes_v;
    graph_options.refresh_check_layer = options.refresh_check_layer;
    graph_options.guard_deviation = std::max(0.0, options.guard_deviation);  // unresolved: off
    graph_options.recompute_min_deviation = options.recompute_min_deviation;
    graph_options.stable_min_deviation = options.stable_min_deviation;
    if (options.selection != TokenSelection::kDeviation) {
      graph_options.query_probe_capacity = options.query_probe_tokens;
    }
  }
  if (options.compiled) {
    if (&options.compiled->model() != &model) {
      return InvalidArgumentError("the compiled model is not of this loaded model");
    }
    REPRISE_ASSIGN_OR_RETURN(s->backend_, GraphBackend::Create(options.compiled, graph_options));
  } else {
    REPRISE_ASSIGN_OR_RETURN(s->backend_, GraphBackend::Create(model, graph_options));
  }
  // Chunks are keyed by the arithmetic that computed them, not by the model file alone.
  s->fingerprint_ = s->backend_->compiled().kv_fingerprint();
  reuse::ChunkMergeOptions merge;
  merge.prefill_capacity = s->backend_->prefill_capacity();
  merge.recompute_capacity = std::max(1, s->backend_->recompute_capacity());
  if (options.prefill_latency_ms > 0 && options.recompute_latency_ms > 0) {
    merge.prefill_latency_ms = options.prefill_latency_ms;
    merge.recompute_latency_ms = options.recompute_latency_ms;
  } else {
    const GraphCosts costs =
        UncalibratedGraphCosts(model.config(), graph_options.check_layer, merge.prefill_capacity,
                               merge.recompute_capacity, options.recompute_ratio);
    merge.prefill_latency_ms = costs.prefill;
    merge.recompute_latency_ms = costs.recompute;
  }
  merge.recompute_ratio = options.recompute_ratio;
  merge.strategy = options.scheduler;
  REPRISE_ASSIGN_OR_RETURN(reuse::ChunkMergeScheduler scheduler,
                           reuse::ChunkMergeScheduler::Create(merge));
  s->scheduler_ = std::make_unique<reuse::ChunkMergeScheduler>(std::move(scheduler));
  s->positions_.resize(static_cast<size_t>(options.context_tokens));
  for (size_t i = 0; i < s->positions_.size(); ++i) s->positions_[i] = static_cast<int32_t>(i);
  s->forced_.resize(static_cast<size_t>(std::max(1, s->backend_->recompute_capacity())));
  s->row_tokens_.resize(s->forced_.size());
  s->row_positions_.resize(s->forced_.size());
  if (s->backend_->has_query_probe()) {
    s->slot_attention_.resize(static_cast<size_t>(options.context_tokens));
    s->row_attention_.resize(s->forced_.size());
  }
  REPRISE_ASSIGN_OR_RETURN(
      SegmentChunker chunker,
      SegmentChunker::Create(model.tokenizer(), options.chunking, options.chunk_tokens));
  s->chunker_ = std::make_unique<SegmentChunker>(std::move(chunker));
  return s;
}

bool IsDeclaredReusableRole(std::string_view role) {
  return role == "system" || role == "document" || role == "skill" || role == "tool";
}

tokenizer::EncodeOptions SegmentEncodeOptions(const PromptSegment& segment) {
  tokenizer::EncodeOptions options;
  options.add_special = false;
  options.parse_special = segment.parse_special;
  options.literal_ranges = segment.literal_ranges;
  return options;
}

Status ReuseSession::Tokenize(std::span<const PromptSegment> segments, int max_prompt_tokens) {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  current_.prompt.clear();
  current_.chunks.clear();
  current_.chunk_declared_reusable.clear();
  // BOS is a chunk of its own: a segment's chunks then hold the same tokens (and content
  // hash) whether the segment opens a prompt or comes later, so a document cached alone is
  // found as a whole chunk in any prompt.
  if (tok.vocab().add_bos && tok.bos_id()) {
    const int32_t bos = *tok.bos_id();
    reuse::PromptChunk chunk;
    chunk.begin = 0;
    chunk.end = 1;
    chunk.content = kv::HashTokens(fingerprint_, std::span(&bos, 1));
    current_.chunks.push_back(chunk);
    current_.chunk_declared_reusable.push_back(1);  // opens every prompt
    current_.prompt.push_back(bos);
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    current_.last_segment_begin = static_cast<int>(current_.prompt.size());
    current_.last_segment_first_chunk = static_cast<int>(current_.chunks.size());
    std::vector<int32_t> ids = tok.Encode(segments[s].text, SegmentEncodeOptions(segments[s]));
    size_t begin = 0;
    for (const int cut : chunker_->Cuts(ids)) {
      const size_t end = static_cast<size_t>(cut);
      reuse::PromptChunk chunk;
      chunk.begin = static_cast<int>(current_.prompt.size() + begin);
      chunk.end = static_cast<int>(current_.prompt.size() + end);
      const std::span<const int32_t> chunk_ids(ids.data() + begin, end - begin);
      chunk.content = kv::HashTokens(fingerprint_, chunk_ids);
      current_.chunks.push_back(chunk);
      current_.chunk_declared_reusable.push_back(IsDeclaredReusableRole(segments[s].role) ? 1 : 0);
      begin = end;
    }
    current_.prompt.insert(current_.prompt.end(), ids.begin(), ids.end());
  }
  if (current_.prompt.empty()) return InvalidArgumentError("the prompt is empty");
  if (max_prompt_tokens > 0 && static_cast<int>(current_.prompt.size()) > max_prompt_tokens) {
    return InvalidArgumentError("the prompt has " + std::to_string(current_.prompt.size()) +
                                " tokens, more than max_prompt_tokens (" +
                                std::to_string(max_prompt_tokens) + ")");
  }
  if (static_cast<int>(current_.prompt.size()) > backend_->capacity_tokens()) {
    return InvalidArgumentError("the prompt has " + std::to_string(current_.prompt.size()) +
                                " tokens but only " + std::to_string(backend_->capacity_tokens()) +
                                " fit in the context; shorten it or raise the context size");
  }
  return Status::Ok();
}

Result<reuse::ReusePlan> ReuseSession::Plan(const reuse::PlannerOptions& planner) const {
  if (options_.method != ReuseMethod::kNone) {
    return reuse::PlanReuse(current_.prompt, current_.chunks, *cache_, planner);
  }
  reuse::ReusePlan plan;
  plan.tokens.assign(current_.prompt.size(), reuse::TokenSource{});
  plan.num_new = static_cast<int>(current_.prompt.size());
  kv::ChunkId node = kv::kRootChunkId;
  for (const reuse::PromptChunk& c : current_.chunks) {
    plan.chunk_ids.push_back(node = kv::ChainId(node, c.content));
  }
  return plan;
}

void ReuseSession::KeepPlanState(const reuse::ReusePlan& plan) {
  const int n = static_cast<int>(current_.prompt.size());
  current_.chunk_ids = plan.chunk_ids;
  current_.planned_kinds.resize(plan.tokens.size());
  for (size_t i = 0; i < plan.tokens.size(); ++i) current_.planned_kinds[i] = plan.tokens[i].kind;
  current_.first_inexact_token = plan.first_inexact_prefix_token >= 0 ? plan.first_inexact_prefix_token : n;
  for (int i = 0; i < current_.first_inexact_token; ++i) {
    if (plan.tokens[static_cast<size_t>(i)].kind == TokenKind::kNonPrefix) {
      current_.first_inexact_token = i;
      break;
    }
  }
}

Status ReuseSession::CheckCancelled() const {
  if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
    return CancelledError("the request was cancelled");
  }
  return Status::Ok();
}

Status ReuseSession::RunNew(int begin, int end) {
  const auto count = static_cast<size_t>(end - begin);
  return backend_->RunPrefill(std::span<const int32_t>(current_.prompt.data() + begin, count),
                              std::span<const int32_t>(positions_.data() + begin, count),
                              std::span<const int32_t>(positions_.data() + begin, count), end);
}

Status ReuseSession::Compute(const reuse::ReusePlan& plan, const reuse::ChunkSchedule& schedule,
                             KvPreparer& preparer, PrefillReport& report) {
  const int n = static_cast<int>(current_.prompt.size());
  const std::vector<reuse::TokenRun> runs = plan.Runs();
  // Every graph call over tokens [begin, end) sees slots [0, end): the reused KV before `end`
  // must be in place, the rest may still be being placed. With the shard pipeline the call's
  // shards wait, each for the layers it attends to (the backend asks the gate); otherwise the
  // call waits for all of it.
  const bool shard_pipeline = options_.overlap_kv_preparation && options_.shard_pipeline;
  int gate_end = 0;
  struct GateReset {
    GraphBackend* backend;
    ~GateReset() { backend->set_shard_gate(nullptr); }
  } gate_reset{backend_.get()};
  if (shard_pipeline) {
    backend_->set_shard_gate(
        [&preparer, &gate_end](int end_layer) { return preparer.ReadyUntil(gate_end, end_layer); });
  }
  const auto all_ready_until = [&](int end) {
    return preparer.ReadyUntil(end)
               ? Status::Ok()
               : UnavailableError("a cached chunk could not be loaded as planned");
  };
  // Before a graph call ending at `end`.
  const auto ready_until = [&](int end) {
    gate_end = end;
    return shard_pipeline ? Status::Ok() : all_ready_until(end);
  };
  if (options_.method != ReuseMethod::kBlend) {
    // Every NEW run through the prefill graph, in order; reused tokens keep their KV.
    for (const reuse::TokenRun& run : runs) {
      if (run.kind != reuse::RunKind::kNew) continue;
      REPRISE_RETURN_IF_ERROR(ready_until(run.end));
      REPRISE_RETURN_IF_ERROR(RunNew(run.begin, run.end));
    }
    REPRISE_RETURN_IF_ERROR(all_ready_until(n));
    report.tokens_nonprefix = plan.num_nonprefix;
    return Status::Ok();
  }
  report.schedule = schedule.ToString();
  const bool has_kept = std::any_of(kept_.begin(), kept_.end(), [](uint8_t k) { return k != 0; });
  const bool query_aware =
      backend_->has_query_probe() &&
      (has_kept ||
       std::any_of(schedule.calls.begin(), schedule.calls.end(), [](const reuse::GraphCall& call) {
         return call.kind == reuse::CallKind::kRecompute;
       }));
  if (query_aware) {
    // The probe reads every reused slot, of the layers up to the check layer: with the shard
    // pipeline it waits for those layers only (the rest is placed while it runs).
    if (shard_pipeline) {
      gate_end = n;
    } else {
      REPRISE_RETURN_IF_ERROR(all_ready_until(n));
    }
    REPRISE_RETURN_IF_ERROR(ProbeQueryAttention(plan));
  }
  // The repair of the kept tokens of stable context: one recompute call over those whose KV
  // most likely deviates, run once every call before the last of them has run (it reads their
  // slots) and before any call after it (which reads its KV).
  report.tokens_stable = static_cast<int>(std::count(kept_.begin(), kept_.end(), 1));
  const std::vector<int> repair = has_kept ? ChooseRepairRows(query_aware) : std::vector<int>();
  size_t repair_before = schedule.calls.size();
  if (!repair.empty()) {
    for (size_t c = 0; c < schedule.calls.size(); ++c) {
      if (schedule.calls[c].begin > repair.back()) {
        repair_before = c;
        break;
      }
    }
  }
  int recomputed = 0;
  std::vector<int> rows;
  for (size_t c = 0; c <= schedule.calls.size(); ++c) {
    if (c == repair_before && !repair.empty()) {
      const int end = repair.back() + 1;
      REPRISE_RETURN_IF_ERROR(ready_until(end));
      REPRISE_RETURN_IF_ERROR(CheckCancelled());
      std::fill_n(forced_.begin(), repair.size(), graph::kRowStableContext);
      REPRISE_ASSIGN_OR_RETURN(const int count,
                               RecomputeRows(plan, repair, end, query_aware, report));
      recomputed += count;
      report.tokens_repair_checked += static_cast<int>(repair.size());
      report.tokens_repaired += count;
    }
    if (c == schedule.calls.size()) break;
    const reuse::GraphCall& call = schedule.calls[c];
    REPRISE_RETURN_IF_ERROR(ready_until(call.end));
    if (call.kind == reuse::CallKind::kPrefill) {
      REPRISE_RETURN_IF_ERROR(RunNew(call.begin, call.end));
      // Reused tokens merged into a prefill call are recomputed too.
      for (int i = call.begin; i < call.end; ++i) {
        recomputed += plan.tokens[static_cast<size_t>(i)].kind == TokenKind::kNonPrefix;
      }
      continue;
    }
    REPRISE_RETURN_IF_ERROR(CheckCancelled());
    rows.clear();
    for (int i = call.begin; i < call.end; ++i) {
      const reuse::TokenSource& t = plan.tokens[static_cast<size_t>(i)];
      bool forced = t.kind == TokenKind::kNew || i == n - 1;
      if (!forced && options_.force_first_tokens > 0 && t.kind == TokenKind::kNonPrefix) {
        // The first tokens of a reused run (a new source, or a jump within it).
        int run_offset = 0;
        for (int j = i; j > 0 && run_offset < options_.force_first_tokens; --j) {
          const reuse::TokenSource& a = plan.tokens[static_cast<size_t>(j - 1)];
          const reuse::TokenSource& b = plan.tokens[static_cast<size_t>(j)];
          if (a.kind != TokenKind::kNonPrefix || a.source != b.source ||
              a.source_token + 1 != b.source_token) {
            break;
          }
          ++run_offset;
        }
        forced = run_offset < options_.force_first_tokens;
      }
      forced_[rows.size()] = forced ? graph::kRowForced : graph::kRowSelectable;
      rows.push_back(i);
    }
    REPRISE_ASSIGN_OR_RETURN(const int count,
                             RecomputeRows(plan, rows, call.end, query_aware, report));
    recomputed += count;
  }
  REPRISE_RETURN_IF_ERROR(all_ready_until(n));
  report.tokens_recomputed = recomputed;
  report.tokens_nonprefix = plan.num_nonprefix - recomputed;
  return Status::Ok();
}

Result<int> ReuseSession::RecomputeRows(const reuse::ReusePlan& plan, std::span<const int> rows,
                                        int num_tokens_after, bool query_aware,
                                        PrefillReport& report) {
  const size_t count = rows.size();
  for (size_t r = 0; r < count; ++r) {
    const auto i = static_cast<size_t>(rows[r]);
    row_tokens_[r] = current_.prompt[i];
    row_positions_[r] = positions_[i];
    if (query_aware) row_attention_[r] = slot_attention_[i];
  }
  const std::span<const int32_t> tokens(row_tokens_.data(), count);
  const std::span<const int32_t> positions(row_positions_.data(), count);
  REPRISE_ASSIGN_OR_RETURN(
      std::span<const int32_t> selected,
      backend_->RunRecompute(tokens, positions, positions,
                             std::span<const uint8_t>(forced_.data(), count), num_tokens_after,
                             query_aware ? std::span<const float>(row_attention_.data(), count)
                                         : std::span<const float>(),
                             query_aware ? options_.selection : TokenSelection::kDeviation));
  const double residual = backend_->last_residual_deviation();
  report.max_residual_deviation = std::max(report.max_residual_deviation, residual);
  report.residual_deviations.push_back(residual);
  int recomputed = 0;
  if (backend_->last_recompute_aborted()) {
    // The reuse is poor: the guard stopped the call at the check layer; recompute every
    // token of it in full (later calls read its KV).
    REPRISE_RETURN_IF_ERROR(backend_->RunPrefill(tokens, positions, positions, num_tokens_after));
    ++report.guard_fallbacks;
    for (const int i : rows) {
      recomputed += plan.tokens[static_cast<size_t>(i)].kind == TokenKind::kNonPrefix;
    }
    return recomputed;
  }
  for (const int32_t row : selected) {
    recomputed += plan.tokens[static_cast<size_t>(rows[static_cast<size_t>(row)])].kind ==
                  TokenKind::kNonPrefix;
  }
  return recomputed;
}

std::vector<int> ReuseSession::ChooseRepairRows(bool query_aware) const {
  // The kept tokens whose KV most likely deviates: a token's deviation grows with the share of
  // its cached context that was deleted (what its attention paid to that block is missing
  // from its KV), and matters as much as the prompt's last tokens read it.
  std::vector<int> kept;
  std::vector<float> score(kept_.size(), 0.0f);
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (kept_[i] == 0) continue;
    kept.push_back(static_cast<int>(i));
    const double share = deleted_[i] / (static_cast<double>(i) + deleted_[i]);
    score[i] = static_cast<float>(query_aware ? share * slot_attention_[i] : share);
  }
  const size_t limit = std::min<size_t>(
      {kept.size(), static_cast<size_t>(std::max(0, options_.stable_repair_tokens)),
       forced_.size()});
  const auto larger = [&](int a, int b) {
    const float sa = score[static_cast<size_t>(a)], sb = score[static_cast<size_t>(b)];
    return sa > sb || (sa == sb && a < b);
  };
  std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(limit), kept.end(),
                   larger);
  kept.resize(limit);
  std::sort(kept.begin(), kept.end());
  return kept;
}

void ReuseSession::FindStableContext(const reuse::ReusePlan& plan) {
  kept_.assign(plan.tokens.size(), 0);
  if (options_.stable_min_deviation <= 0 || cache_ == nullptr) return;
  const std::vector<int> lengths = reuse::StableContextLengths(
      current_.prompt, plan, [this](kv::ChunkId id) { return cache_->Peek(id); }, &deleted_);
  for (size_t i = 0; i < plan.tokens.size(); ++i) {
    kept_[i] = plan.tokens[i].kind == TokenKind::kNonPrefix &&
               lengths[i] >= options_.stable_context_tokens;
  }
}

Result<reuse::ChunkSchedule> ReuseSession::ScheduleBlend(const reuse::ReusePlan& plan) const {
  const std::vector<reuse::TokenRun> runs = plan.Runs();
  if (std::none_of(kept_.begin(), kept_.end(), [](uint8_t k) { return k != 0; })) {
    return scheduler_->Schedule(runs);
  }
  // Kept tokens need no graph call: the rest is scheduled stretch by stretch between them.
  reuse::ChunkSchedule schedule;
  std::vector<reuse::TokenRun> stretch;
  const auto flush = [&]() -> Status {
    if (stretch.empty()) return Status::Ok();
    REPRISE_ASSIGN_OR_RETURN(reuse::ChunkSchedule part, scheduler_->Schedule(stretch));
    schedule.calls.insert(schedule.calls.end(), part.calls.begin(), part.calls.end());
    schedule.total_latency_ms += part.total_latency_ms;
    stretch.clear();
    return Status::Ok();
  };
  for (const reuse::TokenRun& run : runs) {
    for (int i = run.begin; i < run.end;) {
      const bool kept = kept_[static_cast<size_t>(i)] != 0;
      int j = i + 1;
      while (j < run.end && (kept_[static_cast<size_t>(j)] != 0) == kept) ++j;
      if (kept) {
        REPRISE_RETURN_IF_ERROR(flush());
      } else {
        stretch.push_back(reuse::TokenRun{run.kind, i, j});
      }
      i = j;
    }
  }
  REPRISE_RETURN_IF_ERROR(flush());
  return schedule;
}

Status ReuseSession::ProbeQueryAttention(const reuse::ReusePlan& plan) {
  const int n = static_cast<int>(current_.prompt.size());
  // The query: the prompt's trailing new tokens (the question, the last turn), the last
  // query_probe_capacity of them; the last token alone when the prompt ends in reused text.
  const int limit = backend_->query_probe_capacity();
  int begin = n - 1;
  while (begin > 0 && n - begin < limit &&
         plan.tokens[static_cast<size_t>(begin - 1)].kind == TokenKind::kNew) {
    --begin;
  }
  const auto count = static_cast<size_t>(n - begin);
  REPRISE_ASSIGN_OR_RETURN(
      std::span<const float> scores,
      backend_->RunQueryProbe(std::span<const int32_t>(current_.prompt.data() + begin, count),
                              std::span<const int32_t>(positions_.data() + begin, count),
                              std::span<const int32_t>(positions_.data() + begin, count), n));
  std::copy(scores.begin(), scores.end(), slot_attention_.begin());
  std::fill(slot_attention_.begin() + static_cast<long>(scores.size()), slot_attention_.end(),
            0.0f);
  return Status::Ok();
}

Result<PrefillResult> ReuseSession::Prefill(std::span<const PromptSegment> segments,
                                            int max_prompt_tokens) {
  const auto start = std::chrono::steady_clock::now();
  ++prefill_serial_;  // whatever a result of an earlier prefill says, the KV is no longer its
  current_ = PrefillResult{};
  REPRISE_RETURN_IF_ERROR(CheckCancelled());
  if (cache_ == nullptr && options_.method != ReuseMethod::kNone) {
    return InvalidArgumentError("reuse needs a chunk cache");
  }
  REPRISE_RETURN_IF_ERROR(Tokenize(segments, max_prompt_tokens));
  const int n = static_cast<int>(current_.prompt.size());
  PrefillReport base;
  base.prompt_tokens = n;
  // Matching's time includes tokenizing.
  base.match_ms = MillisecondsSince(start);

  reuse::PlannerOptions planner;
  planner.use_nonprefix = options_.method != ReuseMethod::kPrefix;
  // full and blend continue a path an earlier request blended as it stands (a chat's next
  // turn); prefix stays bit-exact.
  planner.use_inexact_prefix = options_.method != ReuseMethod::kPrefix;
  planner.min_match_tokens = options_.min_match_tokens;
  planner.max_candidates = options_.max_candidates;
  const model::PackedWeights& w = backend_->weights();
  const model::ModelConfig& c = w.config();
  const kv::KvShape shape = backend_->kv_cache().shape();
  const RopeLayout rope{w.rope_inv_freq().data(), c.rope_dims,
                        c.rope_style == model::RopeStyle::kNeox ? kernels::RopeStyle::kNeox
                                                                : kernels::RopeStyle::kInterleaved};
  // Plan (the index only), then compute while the planned KV is read and placed beside the
  // graphs (KvLoader, KvPreparer). A source that fails to load is excluded and the prompt
  // planned again; after kMaxPlanAttempts, nothing is reused.
  for (int attempt = 1;; ++attempt) {
    if (attempt == kMaxPlanAttempts) {
      planner.use_prefix = false;
      planner.use_nonprefix = false;
    }
    const auto match_start = std::chrono::steady_clock::now();
    REPRISE_ASSIGN_OR_RETURN(const reuse::ReusePlan plan, Plan(planner));
    base.match_ms += MillisecondsSince(match_start);
    backend_->Truncate(0);
    PrefillReport report = base;
    report.tokens_prefix = plan.num_prefix;
    report.tokens_prefix_inexact = plan.num_prefix_inexact;
    report.tokens_new = plan.num_new;
    report.plan = plan.Summary();
    KeepPlanState(plan);

    const auto compute_start = std::chrono::steady_clock::now();
    const int64_t calls_before = backend_->num_graph_calls();
    // The graph calls (blend's schedule; one per NEW run otherwise) are known before any KV
    // moves: the preparer places what each call needs in call order, shard by shard.
    reuse::ChunkSchedule schedule;
    KvPreparationOrder order;
    if (options_.method == ReuseMethod::kBlend) {
      FindStableContext(plan);
      REPRISE_ASSIGN_OR_RETURN(schedule, ScheduleBlend(plan));
      for (const reuse::GraphCall& call : schedule.calls) order.call_ends.push_back(call.end);
    } else {
      for (const reuse::TokenRun& run : plan.Runs()) {
        if (run.kind == reuse::RunKind::kNew) order.call_ends.push_back(run.end);
      }
    }
    if (options_.overlap_kv_preparation && options_.shard_pipeline) {
      order.shard_first_layers = backend_->shard_first_layers();
    }
    std::vector<kv::ChunkId> failed;
    Status computed;
    {
      reuse::KvLoader loader(cache_, plan, shape);
      KvPreparer preparer(plan, loader, backend_->kv_cache(), positions_, rope,
                          kernels::BestKernels(), order);
      computed = options_.overlap_kv_preparation || preparer.ReadyUntil(n)
                     ? Compute(plan, schedule, preparer, report)
                     : UnavailableError("a cached chunk could not be loaded as planned");
      report.kv_prep_ms = preparer.wait_ms();
      report.kv_place_ms = preparer.place_ms();
      report.kv_load_wait_ms = loader.wait_ms();
      report.chunks_from_memory = loader.num_from_memory();
      report.chunks_from_flash = loader.num_read();
      if (!computed.ok()) failed = loader.WaitAll();
    }
    if (!failed.empty()) {
      REPRISE_LOG(kWarning) << failed.size() << " cached chunk(s) could not be loaded as "
                            << "planned (evicted, damaged, or not what the index said); planning "
                            << "again without them";
      planner.excluded.insert(planner.excluded.end(), failed.begin(), failed.end());
      ++base.replans;
      continue;
    }
    REPRISE_RETURN_IF_ERROR(computed);
    backend_->SetNumTokens(n);
    report.compute_ms = MillisecondsSince(compute_start) - report.kv_prep_ms;
    report.graph_calls = static_cast<int>(backend_->num_graph_calls() - calls_before);
    report.ttft_ms = MillisecondsSince(start);
    current_.report = std::move(report);
    current_.cache = cache_;
    current_.serial = prefill_serial_;
    return std::move(current_);
  }
}

Result<std::span<const float>> ReuseSession::Decode(int32_t token) {
  const int32_t one[] = {token};
  return backend_->Append(one);
}

kv::KvProvenance ReuseSession::ProvenanceOf(const PrefillResult& prefill, int begin,
                                            int end) const {
  kv::KvProvenance provenance;
  provenance.origin = kv::KvOrigin::kComputed;
  for (int i = begin; i < end; ++i) {
    if (prefill.planned_kinds[static_cast<size_t>(i)] != TokenKind::kNonPrefix) continue;
    provenance.origin = kv::KvOrigin::kBlended;
    if (options_.method == ReuseMethod::kBlend) {
      provenance.recompute_ratio = static_cast<float>(options_.recompute_ratio);
      provenance.check_layer =
          std::min(options_.check_layer, backend_->weights().config().num_layers - 1);
    }
    break;
  }
  return provenance;
}

Status ReuseSession::CheckHolds(const PrefillResult& prefill) const {
  // Only a completed prefill's KV is stored (one that failed or was cancelled left part of
  // it uncomputed; its result never reached a caller), and only while the session still holds
  // it: a later prefill has overwritten it.
  if (prefill.serial == 0 || prefill.serial != prefill_serial_) {
    return InvalidArgumentError("the session no longer holds this prefill's KV");
  }
  return Status::Ok();
}

Result<double> ReuseSession::StoreChunks(const PrefillResult& prefill) {
  const auto start = std::chrono::steady_clock::now();
  // Into the cache it was planned against.
  REPRISE_RETURN_IF_ERROR(CheckHolds(prefill));
  kv::ChunkCache* const cache = prefill.cache;
  if (cache == nullptr || options_.method == ReuseMethod::kNone) return 0.0;
  for (size_t i = 0; i < prefill.chunks.size(); ++i) {
    const reuse::PromptChunk& c = prefill.chunks[i];
    // Storing is not a use: Contains loads nothing and counts no hit. An exact computation
    // replaces a cached inexact (blended) entry of the same prefix-tree node; an inexact one
    // never replaces anything.
    const bool exact = c.end <= prefill.first_inexact_token;
    if (cache->Contains(prefill.chunk_ids[i], /*require_exact=*/exact)) continue;
    auto entry = std::make_shared<kv::ChunkEntry>();
    entry->id = prefill.chunk_ids[i];
    entry->parent = i == 0 ? kv::kRootChunkId : prefill.chunk_ids[i - 1];
    entry->content = c.content;
    entry->exact = exact;
    entry->provenance = ProvenanceOf(prefill, c.begin, c.end);
    entry->declared_reusable = prefill.chunk_declared_reusable[i] != 0;
    entry->tokens.assign(prefill.prompt.begin() + c.begin, prefill.prompt.begin() + c.end);
    // Kept in the KV file for inspection; decoded here, off the time-to-first-token path.
    entry->text = model_->tokenizer().Decode(entry->tokens, tokenizer::DecodeOptions{true, false});
    entry->kv = std::make_shared<kv::ChunkKv>(
        ExtractChunkKv(backend_->kv_cache(), c.begin, c.end - c.begin));
    Status status = cache->Insert(std::move(entry));
    if (!status.ok() && status.code() != StatusCode::kResourceExhausted) return status;
  }
  cache->RecordUse(prefill.chunk_ids);
  return MillisecondsSince(start);
}

Result<int> ReuseSession::StoreReply(const PrefillResult& prefill,
                                     const PromptSegment& reply_segment,
                                     std::span<const int32_t> generated) {
  REPRISE_RETURN_IF_ERROR(CheckHolds(prefill));
  kv::ChunkCache* const cache = prefill.cache;
  if (cache == nullptr || options_.method == ReuseMethod::kNone) return 0;
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  const std::vector<int32_t> segment =
      tok.Encode(reply_segment.text, SegmentEncodeOptions(reply_segment));
  // The tokens whose KV the session holds from the generation prompt's segment on: that
  // segment's, then the generated ones fed back (the last sampled one never was).
  const int begin = prefill.last_segment_begin;
  const int n_prompt = static_cast<int>(prefill.prompt.size());
  const int held = backend_->num_tokens();
  const int fed = held - n_prompt;
  if (fed < 0 || static_cast<size_t>(fed) > generated.size()) {
    return InvalidArgumentError("the generated tokens do not match the session's sequence");
  }
  std::vector<int32_t> sequence(prefill.prompt.begin() + begin, prefill.prompt.end());
  sequence.insert(sequence.end(), generated.begin(), generated.begin() + fed);
  // The next turn's segment must start with exactly that sequence (else its KV would be
  // another text's: store nothing), and may go on (the end marker after the reply).
  if (segment.size() < sequence.size() ||
      !std::equal(sequence.begin(), sequence.end(), segment.begin())) {
    return 0;
  }
  if (begin + static_cast<int64_t>(segment.size()) > backend_->capacity_tokens()) return 0;
  const std::span<const int32_t> rest(segment.data() + sequence.size(),
                                      segment.size() - sequence.size());
  if (!rest.empty()) {
    Result<std::span<const float>> appended = backend_->Append(rest);
    if (!appended.ok()) return appended.error();
  }
  // The reply's KV is exact only when everything before it was.
  const bool exact = prefill.first_inexact_token >= n_prompt;
  kv::ChunkId parent = prefill.last_segment_first_chunk == 0
                           ? kv::kRootChunkId
                           : prefill.chunk_ids[static_cast<size_t>(prefill.last_segment_first_chunk - 1)];
  std::vector<kv::ChunkId> stored_ids(prefill.chunk_ids.begin(),
                                      prefill.chunk_ids.begin() + prefill.last_segment_first_chunk);
  int stored = 0;
  size_t b = 0;
  for (const int cut : chunker_->Cuts(segment)) {
    const size_t e = static_cast<size_t>(cut);
    const std::span<const int32_t> ids(segment.data() + b, e - b);
    const kv::ContentHash content = kv::HashTokens(fingerprint_, ids);
    const kv::ChunkId id = kv::ChainId(parent, content);
    stored_ids.push_back(id);
    if (!cache->Contains(id, /*require_exact=*/exact)) {
      auto entry = std::make_shared<kv::ChunkEntry>();
      entry->id = id;
      entry->parent = parent;
      entry->content = content;
      entry->exact = exact;
      entry->provenance.origin = kv::KvOrigin::kComputed;  // the reply ran through the model
      entry->tokens.assign(ids.begin(), ids.end());
      entry->text = tok.Decode(ids, tokenizer::DecodeOptions{true, false});
      entry->kv = std::make_shared<kv::ChunkKv>(ExtractChunkKv(
          backend_->kv_cache(), begin + static_cast<int>(b), static_cast<int>(e - b)));
      Status status = cache->Insert(std::move(entry));
      if (!status.ok() && status.code() != StatusCode::kResourceExhausted) return status;
      stored += static_cast<int>(e - b);
    }
    parent = id;
    b = e;
  }
  cache->RecordUse(stored_ids);
  return stored;
}

}  // namespace reprise::engine
