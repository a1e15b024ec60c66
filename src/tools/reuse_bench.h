// `reprise bench reuse`: TTFT and quality of the reuse methods on a real workload (docqa,
// chat, skills; docs/design.md §8).
//
// Every method gets its own chunk cache, warmed only by the earlier queries of the same run
// (no peeking; `warm_corpus` is an explicit exception that pre-computes a RAG corpus). The
// methods run query by query, interleaved, so that machine noise hits them alike. Quality
// is measured against a full prefill of the same prompt: KL divergence of the next-token
// distribution, top-1 agreement, and agreement of a greedy continuation.
//
// Built on the public API: one Engine, a Session per method in its own namespace
// ("bench-<method>"), the requests' ReuseReport and ReuseDiagnostics (with the recall oracle's
// masks, where reusable tokens were lost), Engine::StatsOf and the store's counters.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "reprise/engine.h"
#include "reuse/reuse_recall_losses.h"

namespace reprise::tools {

struct ReuseBenchOptions {
  std::string model_path;
  std::string data_dir;  // the shared data folder (holds workloads/)
  std::string workload = "docqa";
  std::string docqa_file;  // workload::WorkloadOptions::docqa_file
  std::vector<ReuseMethod> methods = {ReuseMethod::kNone, ReuseMethod::kPrefix, ReuseMethod::kFull,
                                      ReuseMethod::kBlend};
  int num_queries = 20;
  int top_chunks = 6;
  int chunk_tokens = 512;
  int max_prompt_tokens = 0;  // 0 = the model's context less the continuation
  int continuation_tokens = 16;
  int max_catalog_skills = 0;  // skills: cap the shared catalogue (0 = every skill)
  bool warm_corpus = false;    // pre-compute the workload's collection (a cached RAG corpus)
  // Pre-compute only the documents the queries will retrieve (a user's own, already cached
  // library; for demos — it knows the future, so it is reported as such).
  bool warm_retrieved_only = false;
  bool verbose = false;  // per query: plan and schedule
  // Compare with a full prefill of every prompt (KL, top-1, continuation). Off, no oracle
  // runs unless `none` is among the methods, and the quality columns are empty.
  bool measure_quality = true;
  // The engine: context (capped at the model's), threads, capacities (0 = calibrated or the
  // defaults), ratio, guard, selection, shapes, int8, the store (cache_mb is each method's
  // memory cache, or the store's pool; store_dir: one namespace per method, a second run
  // finds the chunks of the first), calibration_dir and the tuning. Its model_path and reuse
  // method are set by the benchmark.
  EngineOptions engine;
  // Before every query: the store's write-back finished and its KV files dropped from the
  // OS page cache (Engine::DropStoreFromPageCache), so KV not in the pool comes from storage.
  bool cold_flash = false;
  // Told of each segment warmed ("warming", segments) and of each method's run of each query
  // ("queries", runs: queries x methods, the full-prefill oracle included).
  ProgressCallback progress;
};

inline constexpr int kRecallWindowQueries = 50;

struct MethodStats {
  std::string method;
  int queries = 0;
  double ttft_ms_mean = 0, ttft_ms_p50 = 0, ttft_ms_p90 = 0;
  double speedup_vs_none = 0;
  double kl_mean = 0, top1_agreement = 0, continuation_agreement = 0;
  // Per query (with quality measured): KL, and the share of the continuation that agreed;
  // and their tails: the 95th percentile and worst KL, the 10th percentile of agreement.
  std::vector<double> kl_per_query, continuation_per_query;
  double kl_p95 = 0, kl_max = 0, continuation_p10 = 0;
  // Position sensitivity: prompts whose ids differ only after '#' (docqa-orders: the same
  // documents in another order) form a group; a group is stable when this method's greedy
  // continuation is the same for all of them. -1 without such groups.
  int order_groups = 0;
  double order_stability = -1;
  int64_t tokens_prefix = 0, tokens_nonprefix = 0, tokens_recomputed = 0, tokens_new = 0;
  // blend: of tokens_nonprefix, the stable context kept without a graph call (ReuseReport).
  int64_t tokens_stable = 0;
  double match_ms_mean = 0, kv_prep_ms_mean = 0, compute_ms_mean = 0;
  double overhead_ms_mean = 0;  // matching + KV preparation (not hidden by compute)
  // kv_prep_ms_mean is the time graph calls waited for reused KV (what computing did not
  // hide); beside the graphs, the preparer placed KV for place_ms and waited for the
  // loader's reads for load_wait_ms.
  double background_place_ms_mean = 0, background_load_wait_ms_mean = 0;
  // Recomputed tokens / reused tokens a graph actually ran (recomputed + kept at new positions).
  double recompute_fraction = 0;
  double graph_calls_mean = 0;  // prefill, recompute and probe graph calls per query
  double store_ms_mean = 0;     // after the first token, off the TTFT path
  int64_t cache_chunks = 0, cache_bytes = 0, cache_evictions = 0;
  int64_t hits_pool = 0, hits_flash = 0;   // chunks served from memory / loaded from flash
  double store_write_ms_on_ttft_path = 0;  // total over the run; 0 by design
  // blend: recompute calls the quality guard sent back to the prefill graph (total), and the
  // mean over queries of a query's largest residual deviation.
  int64_t guard_fallbacks = 0;
  double residual_deviation_mean = 0;
  std::vector<double> ttft_ms;  // per query
  // Reuse recall: the reusable tokens found in the cache (ReuseReport::found_runs: prefix +
  // non-prefix, recomputed or not, intersected token by token with the oracle's mask) over the
  // tokens the oracle calls reusable (ReuseBenchResult::tokens_reusable); in total and per
  // query (-1 where the oracle found nothing). Methods with a cache only (none: 0).
  int64_t tokens_found = 0;
  double reuse_recall = 0;
  std::vector<double> reuse_recall_per_query;
  // Recall over consecutive windows of kRecallWindowQueries queries (found / reusable in the
  // window): whether a bounded store keeps its hit rate as the run goes on.
  std::vector<double> reuse_recall_by_window;
  // The reusable tokens left NEW, by cause (RecallLosses), over the run.
  reuse::RecallLosses recall_losses;
};

struct ReuseBenchResult {
  std::string calibration;  // "Lp 128, Ls 256 (calibrated)" or "(defaults)"
  std::string workload;
  std::string model;
  int queries = 0;
  double prompt_tokens_mean = 0;
  std::string workload_stats;
  std::string store;           // the store's final state, when one was used
  double guard_deviation = 0;  // the quality guard's threshold (0 = off)
  std::string selection;       // what blend's recompute ranks tokens by (TokenSelectionName)
  bool static_shapes = false;  // every graph call computed its full capacity
  std::string scheduler;       // how blend's graph calls were chosen (dp, greedy, naive)
  // The recall oracle (reuse/reuse_recall_oracle.h): a token is reusable when a window of
  // `recall_window` tokens (the planner's min_match_tokens) around it occurred in an earlier
  // prompt of this run or a warmed segment. Per query and in total. A store kept from an
  // earlier run holds chunks the oracle has not seen: recall can then pass 100%.
  int recall_window = 0;
  int64_t tokens_reusable = 0;
  std::vector<int> tokens_reusable_per_query;
  std::vector<MethodStats> methods;  // in the order asked

  std::string ToJson() const;
  std::string ToText() const;
};

// Errors: those of loading the model and building the workload; InvalidArgument.
Result<ReuseBenchResult> RunReuseBench(const ReuseBenchOptions& options,
                                       const std::function<void(const std::string&)>& log = {});

// KL(p || q) of the softmax distributions of two logit rows, in nats.
double SoftmaxKl(std::span<const float> p_logits, std::span<const float> q_logits);

}  // namespace reprise::tools
