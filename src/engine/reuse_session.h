// ReuseSession: the request path of docs/design.md §1 — tokenize segments into chunks, match them
// against the chunk cache, plan, schedule, prepare KV (copy / re-rotate), run the prefill and
// selective-recompute graphs, and afterwards store the prompt's chunks.
//
// Methods (per session): none (full prefill), prefix (exact prefix reuse only), full
// (prefix + non-prefix reuse by re-rotation, nothing recomputed: the Prompt Cache
// baseline) and blend (prefix + non-prefix with selective recompute: ours).
// Confined to one thread. The LoadedModel and the ChunkCache must outlive it.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/graph_backend.h"
#include "engine/kv_preparer.h"
#include "engine/loaded_model.h"
#include "engine/segment_chunker.h"
#include "kv/chunk_cache.h"
#include "reprise/defaults.h"
#include "reprise/types.h"
#include "reuse/chunk_merge_scheduler.h"
#include "reuse/kv_loader.h"
#include "reuse/reuse_planner.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

// ReuseOptions::guard_deviation: the threshold calibrated for the model
// (guard_calibration.h, ResolveQualityGuard); a session given it unresolved runs unguarded.
inline constexpr double kGuardCalibrated = -1.0;

struct ReuseOptions {
  ReuseMethod method = ReuseMethod::kBlend;
  int context_tokens = 4096;
  int num_threads = 0;
  int chunk_tokens = 512;                           // longest chunk a segment is cut into
  ChunkingMode chunking = ChunkingMode::kContent;   // where segments are cut (segment_chunker.h)
  int prefill_capacity = 128;                       // Lp
  int recompute_capacity = 256;                     // Ls
  double recompute_ratio = kDefaultRecomputeRatio;  // r
  int check_layer = 1;
  bool deviation_includes_v = false;
  // Keep the check layer's fresh K/V for every reused token (see model::CompileOptions).
  bool refresh_check_layer = false;
  // Also recompute the first N tokens of every reused run (docs/design.md §2 step 3: chunks cached
  // alone carry spurious attention sinks at their start).
  int force_first_tokens = 0;
  // What recompute calls rank reused tokens by (docs/design.md §2): their deviation at the check
  // layer (CacheBlend), or query-aware — the attention that the prompt's last
  // `query_probe_tokens` new tokens (the question, the last turn) pay to them at the check
  // layer, measured by a probe over the reused KV before the first call, alone or times the
  // deviation. Query-aware selection waits for all the reused KV before the first call (the
  // probe reads it). The default: docs/benchmarks.md, "Selection strategies".
  TokenSelection selection = TokenSelection::kDeviation;
  int query_probe_tokens = 32;  // 1 .. graph::kMaxProbeRows
  // Quality guard (docs/design.md §2): when a recompute call leaves reused rows whose mean relative
  // deviation at the check layer (|fresh - cached|^2 / |fresh|^2 of K, plus V with
  // deviation_includes_v) is above this, the call's tokens are prefilled in full instead.
  // 0 = off; kGuardCalibrated = the model's calibrated threshold (the default: off until
  // ResolveQualityGuard finds or measures one).
  double guard_deviation = kGuardCalibrated;
  // Adaptive recompute: r·Ls becomes an upper bound; of the tokens it would recompute, those
  // whose relative deviation at the check layer (|fresh - cached|^2 / |fresh|^2) is below
  // this keep their cached KV. A history that only moved recomputes little; reordered
  // documents still get what they need. 0 = off (always r·Ls).
  double recompute_min_deviation = 0.0;
  // Stable context (reuse/stable_context.h): when the prompt is a cached context with one
  // block cut out and new text after it (a chat whose window moved), its reused tokens at
  // least `stable_context_tokens` past the cut run through no graph call and keep their KV,
  // but for one repair call over the `stable_repair_tokens` of them whose KV most likely
  // deviates (the largest share of their cached context cut out, times the attention the
  // prompt's last tokens pay them when a probe ran), which recomputes, of its r share, those
  // whose relative deviation at the check layer reaches `stable_min_deviation`. The tokens
  // nearer the cut, and every reused token of any other prompt, are selected by the r share
  // as always. 0 = off. The defaults: docs/benchmarks.md, "A chat whose window moves".
  double stable_min_deviation = kDefaultStableRecomputeMinDeviation;
  int stable_context_tokens = 128;
  int stable_repair_tokens = 256;  // at most the recompute capacity
  int min_match_tokens = 32;
  int max_candidates = 32;
  // Read and place the reused KV beside the graph calls (KvPreparer); false: all of it
  // before the first call (the ablation of the pipeline).
  bool overlap_kv_preparation = true;
  // With the overlap: place each call's reused KV shard by shard (layer groups), running a
  // call's shard once the KV of its layers is in, so the first shard starts after a fraction
  // of the placing (kv_preparer.h). false: a call waits for all layers of its KV (ablation).
  bool shard_pipeline = true;
  // Static shapes (GraphBackendOptions::strict_shapes): every graph call computes its full
  // capacity, padding included, as an NPU or another ahead-of-time backend must. Same
  // results; a call then costs what the scheduler's per-call latency says.
  bool static_shapes = false;
  // Out-of-order subgraph scheduling of multi-call prefills (GraphBackendOptions).
  int out_of_order_groups = 0;
  int out_of_order_window = 2;
  // How blend's graph calls are chosen (docs/design.md §5): the DP, or the ablation's greedy and
  // naive baselines (reuse/chunk_merge_scheduler.h).
  ScheduleStrategy scheduler = ScheduleStrategy::kDp;
  // Graph latencies for the scheduler, measured by a calibration (both > 0); otherwise the
  // scheduler uses UncalibratedGraphCosts.
  double prefill_latency_ms = 0.0;
  double recompute_latency_ms = 0.0;
  // The session of a CompiledModel shared with other sessions of the same model: weights,
  // threads and graphs are its (num_threads is then ignored). Null = a CompiledModel of its
  // own, on the shared weights and threads below when given.
  std::shared_ptr<const CompiledModel> compiled;
  std::shared_ptr<const model::PackedWeights> shared_weights;
  std::shared_ptr<ThreadPool> shared_pool;
  // How a CompiledModel of its own packs the weights (the static INT8 scheme, among others),
  // and where that scheme's activation calibration is kept (CompiledModelOptions).
  model::PackOptions pack;
  std::string calibration_dir;
  // Decode steps batched with other sessions' (GraphBackendOptions::decode_batcher); null =
  // not batched.
  DecodeBatcher* decode_batcher = nullptr;
};

// The scheduler's cost of one graph call when no calibration measured it, in multiply-adds of
// the layers' projections (one row through one layer costs the same in both graphs; attention
// and the norms scale alike and are left out, and only the ratio of the two costs matters):
//  - prefill: its Lp rows through every layer;
//  - recompute: its Ls rows through the layers before the check layer, their Q, K and V
//    projections at the check layer (K's deviation selects), and the ceil(r * Ls) selected
//    rows through the rest of the check layer and every later layer;
//  - each call: 4 rows through every layer more (what a call costs beyond its rows).
// So a tiny r still pays for the layers every row runs (at r = 0.004 a recompute call is
// not free, and a prompt does not become dozens of calls), and a shallow model, whose check
// layer is most of it, prefers an exact prefill when it costs about the same. How close this
// comes to `reprise calibrate`'s measurement: docs/benchmarks.md, "Figures behind constants in
// the code".
struct GraphCosts {
  double prefill = 0;
  double recompute = 0;
};
GraphCosts UncalibratedGraphCosts(const model::ModelConfig& config, int check_layer,
                                  int prefill_capacity, int recompute_capacity,
                                  double recompute_ratio);

struct PromptSegment {
  std::string role;
  std::string text;
  // Turn texts of special tokens (a chat template's markers) into those tokens ...
  bool parse_special = false;
  // ... except in these byte ranges of `text`, which stay text (the messages' own text: see
  // tokenizer::FormatChatText).
  std::vector<tokenizer::TextRange> literal_ranges;
};

// Whether a segment of this role is declared reusable context — "system", "document",
// "skill", "tool": a store with admission control writes its chunks at once instead of
// waiting for them to recur (store/admission.h). Questions, turns and plain prompts are
// not: they are written once they recur.
bool IsDeclaredReusableRole(std::string_view role);

// How `segment` is encoded (no BOS: the session adds it once). The options borrow the
// segment's ranges: valid while it lives.
tokenizer::EncodeOptions SegmentEncodeOptions(const PromptSegment& segment);

struct PrefillReport {
  int prompt_tokens = 0;
  int tokens_prefix = 0;
  int tokens_prefix_inexact = 0;  // of those, continuing KV an earlier request blended
  int tokens_nonprefix = 0;       // reused at a new position and not recomputed
  int tokens_recomputed = 0;      // reused, then recomputed by selection
  int tokens_new = 0;
  double ttft_ms = 0.0;   // prefill time: match + KV preparation + compute
  double match_ms = 0.0;  // tokenizing and planning (the cache's index only)
  // Waiting for reused KV before graph calls: the loading and placing that computing did not
  // hide (KvPreparer). The rest of the work ran beside the graphs: placing (kv_place_ms) and
  // waiting for reads while placing (kv_load_wait_ms).
  double kv_prep_ms = 0.0;
  double kv_place_ms = 0.0;
  double kv_load_wait_ms = 0.0;
  // The plan's sources that were in memory, and those read from the cache's flash tier.
  int chunks_from_memory = 0;
  int chunks_from_flash = 0;
  int replans = 0;  // plans made again because a source failed to load
  double compute_ms = 0.0;
  int graph_calls = 0;  // of the prefill, recompute and probe graphs (the last plan's)
  // blend: the largest residual deviation of a recompute call, and how many calls the quality
  // guard sent back through the prefill graph.
  double max_residual_deviation = 0.0;
  int guard_fallbacks = 0;
  // blend: reused tokens of stable context kept out of the regular graph calls; those the
  // repair call checked, and of those the ones it recomputed (counted in tokens_recomputed).
  int tokens_stable = 0;
  int tokens_repair_checked = 0;
  int tokens_repaired = 0;
  std::vector<double> residual_deviations;  // per recompute call, in order
  std::string plan;
  std::string schedule;
};

// What one prefill made of its prompt: its report, and what storing its chunks and its reply,
// or a benchmark's recall diagnosis, need of it — a value the caller holds, not state left in
// the session. Storing checks that the session still holds this prefill's KV.
struct PrefillResult {
  PrefillReport report;
  std::vector<int32_t> prompt;                   // the prompt's tokens, BOS first
  std::vector<reuse::PromptChunk> chunks;        // the prompt's chunks
  std::vector<uint8_t> chunk_declared_reusable;  // per chunk: IsDeclaredReusableRole
  std::vector<kv::ChunkId> chunk_ids;            // their prefix-tree ids
  std::vector<reuse::TokenKind> planned_kinds;   // how the plan labelled each token
  int first_inexact_token = 0;                   // tokens from here on hold approximate KV
  int last_segment_begin = 0;                    // where the last segment starts
  int last_segment_first_chunk = 0;              // and its first chunk
  kv::ChunkCache* cache = nullptr;               // the cache it was planned against
  uint64_t serial = 0;                           // which prefill of the session it was
};

class ReuseSession {
 public:
  // `cache` may be null for ReuseMethod::kNone. Errors: those of GraphBackend::Create,
  // InvalidArgument for bad options.
  static Result<std::unique_ptr<ReuseSession>> Create(const LoadedModel& model,
                                                      const ReuseOptions& options,
                                                      kv::ChunkCache* cache);

  // Runs the prompt made of `segments` (BOS first, as the vocabulary says) and leaves the
  // session ready to decode. Errors: InvalidArgument (empty prompt, or longer than the
  // context or than `max_prompt_tokens` when that is > 0).
  Result<PrefillResult> Prefill(std::span<const PromptSegment> segments, int max_prompt_tokens = 0);

  // The logits after the last prompt (or generated) token. Valid until the next call.
  std::span<const float> logits() const { return backend_->last_logits(); }

  // Feeds `token` and returns the next logits (decode graph).
  Result<std::span<const float>> Decode(int32_t token);

  // Stores the chunks of `prefill`'s prompt in the cache it was planned against (call after the
  // first token: this is not on the TTFT path). Returns the milliseconds it took. Errors:
  // InvalidArgument when the session no longer holds that prefill's KV (a later Prefill),
  // those of the cache.
  Result<double> StoreChunks(const PrefillResult& prefill);

  // The chunk cache of the next Prefill and StoreChunks (e.g. another tenant's namespace);
  // null only for ReuseMethod::kNone. The cache must outlive its use.
  void set_cache(kv::ChunkCache* cache) { cache_ = cache; }
  kv::ChunkCache* cache() const { return cache_; }
  // A flag that, once set (from any thread), makes Prefill stop between graph calls with
  // Cancelled; null = never.
  void set_cancel(const std::atomic<bool>* cancel) {
    cancel_ = cancel;
    backend_->set_cancel(cancel);
  }

  // After a reply to a chat prompt (whose last segment is the generation prompt, e.g. the
  // assistant header): stores the KV of `reply_segment` — the segment the next turn of the
  // chat holds in that place (the header, the reply, the end marker) — as chunks following
  // the prompt's, so that the next turn reuses the whole conversation as an exact prefix, as
  // a server slot keeps it. `generated` are the tokens sampled for the reply. The session's
  // KV from the header on must be that segment's first tokens, else nothing is stored (a
  // reply whose text tokenizes otherwise); the tokens after them (the end marker) are run
  // through the decode graph first. Returns the tokens stored. Errors: InvalidArgument (the
  // session no longer holds `prefill`'s KV), those of the backend and the cache.
  Result<int> StoreReply(const PrefillResult& prefill, const PromptSegment& reply_segment,
                         std::span<const int32_t> generated);

  const ReuseOptions& options() const { return options_; }
  GraphBackend& backend() { return *backend_; }

 private:
  ReuseSession(const LoadedModel& model, const ReuseOptions& options, kv::ChunkCache* cache)
      : model_(&model), options_(options), cache_(cache) {}
  Status Tokenize(std::span<const PromptSegment> segments, int max_prompt_tokens);
  static constexpr int kMaxPlanAttempts = 3;
  // How the KV of prompt tokens [begin, end) was made by the last prefill: blended when any
  // of them was reused at a new position (with blend's r and check layer; r = 0 for full),
  // else computed.
  kv::KvProvenance ProvenanceOf(const PrefillResult& prefill, int begin, int end) const;
  // OK when the session's KV is still `prefill`'s.
  Status CheckHolds(const PrefillResult& prefill) const;
  // The plan of the prompt (pure: the cache's index only); nothing reused for kNone.
  Result<reuse::ReusePlan> Plan(const reuse::PlannerOptions& planner) const;
  // Keeps what storing after the request needs of the plan (chunk ids, token kinds, where
  // the inexact KV starts).
  void KeepPlanState(const reuse::ReusePlan& plan);
  // Runs NEW tokens [begin, end) through the prefill graph; the call sees slots [0, end).
  Status RunNew(int begin, int end);
  Status CheckCancelled() const;
  // The graph calls of the plan, in order; before each, `preparer` makes the reused KV it
  // reads visible. Unavailable when a source failed to load (the caller plans again).
  // Runs the graph calls of `plan` (blend: those of `schedule`; the other methods: one per
  // NEW run) while `preparer` places the reused KV.
  Status Compute(const reuse::ReusePlan& plan, const reuse::ChunkSchedule& schedule,
                 KvPreparer& preparer, PrefillReport& report);
  // Query-aware selection: probes the attention the prompt's last new tokens pay to every
  // slot before them into slot_attention_ (zeros past what the probe scored).
  Status ProbeQueryAttention(const reuse::ReusePlan& plan);
  // blend: which reused tokens are of stable context far enough from the cut to keep their KV
  // (kept_, and deleted_ for each of them); none when stable context is off.
  void FindStableContext(const reuse::ReusePlan& plan);
  // The plan's graph calls; kept tokens are in none (the rest is scheduled stretch by
  // stretch between them).
  Result<reuse::ChunkSchedule> ScheduleBlend(const reuse::ReusePlan& plan) const;
  // The kept tokens a repair call checks (ascending): at most stable_repair_tokens of those
  // whose KV most likely deviates.
  std::vector<int> ChooseRepairRows(bool query_aware) const;
  // One recompute call over prompt tokens `rows` (ascending; their modes in forced_), which
  // sees slots [0, num_tokens_after); when the guard stops it, the rows are prefilled in full.
  // Returns how many reused tokens it recomputed.
  Result<int> RecomputeRows(const reuse::ReusePlan& plan, std::span<const int> rows,
                            int num_tokens_after, bool query_aware, PrefillReport& report);

  const LoadedModel* model_;
  ReuseOptions options_;
  kv::ChunkCache* cache_;
  const std::atomic<bool>* cancel_ = nullptr;
  // The prefill in progress, handed to the caller when it completes; between prefills empty.
  PrefillResult current_;
  uint64_t prefill_serial_ = 0;  // prefills begun: a completed one's result carries its number
  uint64_t fingerprint_ = 0;  // CompiledModel::kv_fingerprint: the chunks' content hashes
  std::unique_ptr<GraphBackend> backend_;
  std::unique_ptr<reuse::ChunkMergeScheduler> scheduler_;
  std::unique_ptr<SegmentChunker> chunker_;
  std::vector<int32_t> positions_;      // [context] 0, 1, 2, ...
  std::vector<uint8_t> forced_;         // scratch, [recompute capacity]
  std::vector<uint8_t> kept_;           // [prompt] blend: reused tokens in no regular call
  std::vector<int> deleted_;            // [prompt] StableContextLengths' deleted tokens
  std::vector<int32_t> row_tokens_;     // scratch, [recompute capacity]
  std::vector<int32_t> row_positions_;  // scratch, [recompute capacity]
  std::vector<float> slot_attention_;   // query-aware selection: [context] the probe's scores
  std::vector<float> row_attention_;    // scratch, [recompute capacity]
};

}  // namespace reprise::engine
