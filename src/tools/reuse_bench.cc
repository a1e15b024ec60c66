#include "tools/reuse_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/calibration.h"
#include "engine/guard_calibration.h"
#include "engine/sampler.h"
#include "engine/store_settings.h"
#include "kv/memory_chunk_cache.h"
#include "reuse/reuse_recall_losses.h"
#include "reuse/reuse_recall_oracle.h"
#include "store/store_dir.h"
#include "workload/named_workload.h"

namespace reprise::tools {
namespace {

using engine::Argmax;
using engine::BudgetMibToBytes;
using engine::LoadedModel;
using engine::OpenChunkStore;
using engine::PrefillReport;
using engine::PromptSegment;
using engine::ReuseMethod;
using engine::ReuseMethodName;
using engine::ReuseOptions;
using engine::ReuseSession;
using engine::StoreSettings;

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double index = p * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(index));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (values[hi] - values[lo]) * (index - static_cast<double>(lo));
}

// Greedy continuation of `count` tokens from the session's current logits.
Result<std::vector<int32_t>> Continue(ReuseSession& session, int count) {
  std::vector<int32_t> out;
  std::span<const float> logits = session.logits();
  for (int i = 0; i < count; ++i) {
    const int32_t token = Argmax(logits);
    out.push_back(token);
    if (i + 1 == count) break;
    REPRISE_ASSIGN_OR_RETURN(logits, session.Decode(token));
  }
  return out;
}

struct MethodRun {
  ReuseMethod method;
  std::unique_ptr<kv::ChunkCache> cache;
  std::unique_ptr<ReuseSession> session;
  MethodStats stats;
  double kl_sum = 0, top1_sum = 0, continuation_sum = 0;
  double match_sum = 0, prep_sum = 0, place_sum = 0, load_wait_sum = 0, compute_sum = 0,
         store_sum = 0, calls_sum = 0;
  std::vector<int64_t> window_found, window_reusable;  // per kRecallWindowQueries queries
  // Continuations by prompt group (the id before '#'), for order stability.
  std::map<std::string, std::vector<std::vector<int32_t>>> continuations_by_group;
  double residual_sum = 0;
};

}  // namespace

double SoftmaxKl(std::span<const float> p_logits, std::span<const float> q_logits) {
  auto log_softmax = [](std::span<const float> x) {
    const double max = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (float v : x) sum += std::exp(v - max);
    const double log_sum = max + std::log(sum);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - log_sum;
    return out;
  };
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);
}

Result<ReuseBenchResult> RunReuseBench(const ReuseBenchOptions& options,
                                       const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  if (options.methods.empty()) return InvalidArgumentError("no methods to run");
  if (options.continuation_tokens < 1) return InvalidArgumentError("continuation must be >= 1");
  if (options.num_queries < 1 || options.top_chunks < 1 || options.chunk_tokens < 1 ||
      options.max_prompt_tokens < 0 || options.max_catalog_skills < 0) {
    return InvalidArgumentError(
        "queries, top chunks and chunk tokens must be >= 1; prompt and catalogue limits >= 0");
  }
  REPRISE_ASSIGN_OR_RETURN(const int64_t cache_budget_bytes,
                           BudgetMibToBytes(options.cache_budget_mb, "cache budget"));
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedModel> model,
                           LoadedModel::Load(options.model_path));
  const tokenizer::Tokenizer& tok = model->tokenizer();
  const int context = std::min(options.reuse.context_tokens, model->config().context_length);

  workload::WorkloadOptions wl;
  wl.data_dir = options.data_dir;
  wl.num_queries = options.num_queries;
  wl.top_chunks = options.top_chunks;
  wl.chunk_tokens = options.chunk_tokens;
  wl.max_prompt_tokens = options.max_prompt_tokens > 0 ? options.max_prompt_tokens
                                                       : context - options.continuation_tokens - 8;
  wl.count_tokens = [&tok](std::string_view text) {
    return static_cast<int>(tok.Encode(text, tokenizer::EncodeOptions{false, false}).size());
  };
  wl.max_catalog_skills = options.max_catalog_skills;
  REPRISE_ASSIGN_OR_RETURN(workload::Workload work,
                           workload::BuildNamedWorkload(options.workload, wl));
  say("workload " + work.name + ": " + std::to_string(work.requests.size()) + " requests");

  ReuseOptions tuned = options.reuse;
  std::string calibration_note = "(given)";
  if (!options.calibration_dir.empty() && !options.keep_capacities) {
    calibration_note =
        engine::ApplyCalibration(options.calibration_dir, model->fingerprint(), &tuned)
            ? "(calibrated)"
            : "(defaults; run `reprise calibrate` to tune)";
  }
  // The quality guard: the model's calibrated threshold unless one was given (measured once
  // when missing, as an engine does).
  if (std::find(options.methods.begin(), options.methods.end(), ReuseMethod::kBlend) !=
      options.methods.end()) {
    engine::ResolveQualityGuard(*model, options.calibration_dir, /*measure_if_missing=*/true,
                                &tuned);
  } else {
    tuned.guard_deviation = 0.0;  // no blend run: nothing to guard, nothing to measure
  }

  // The oracle (full prefill) always runs, for quality; it is also the `none` method.
  std::vector<ReuseMethod> methods = options.methods;
  if (options.measure_quality &&
      std::find(methods.begin(), methods.end(), ReuseMethod::kNone) == methods.end()) {
    methods.insert(methods.begin(), ReuseMethod::kNone);
  }
  std::unique_ptr<store::ChunkStore> store;
  if (!options.store_dir.empty()) {
    StoreSettings settings;
    settings.dir = options.store_dir;
    settings.pool_mb = options.cache_budget_mb;
    settings.disk_mb = options.store_disk_mb;
    settings.codec = options.store_codec;
    settings.cost_aware = options.store_cost_aware;
    settings.prefetch = options.store_prefetch;
    settings.admit_after = options.store_admit_after;
    settings.recompute_ratio = tuned.recompute_ratio;
    settings.compute_ms_per_token = engine::ComputeMsPerToken(tuned);
    REPRISE_ASSIGN_OR_RETURN(store, OpenChunkStore(*model, settings));
  }
  std::vector<MethodRun> runs;
  std::shared_ptr<const model::PackedWeights> weights;
  std::shared_ptr<ThreadPool> pool;
  for (ReuseMethod method : methods) {
    MethodRun run;
    run.method = method;
    run.stats.method = ReuseMethodName(method);
    ReuseOptions reuse = tuned;
    reuse.method = method;
    reuse.context_tokens = context;
    reuse.chunk_tokens = std::min(reuse.chunk_tokens, options.chunk_tokens);
    reuse.shared_weights = weights;
    reuse.shared_pool = pool;
    if (method != ReuseMethod::kNone) {
      if (store) {
        run.cache = store->OpenNamespace(std::string("bench-") + ReuseMethodName(method));
      } else {
        run.cache = std::make_unique<kv::MemoryChunkCache>(cache_budget_bytes);
      }
    }
    REPRISE_ASSIGN_OR_RETURN(run.session, ReuseSession::Create(*model, reuse, run.cache.get()));
    weights = run.session->backend().shared_weights();
    pool = run.session->backend().shared_pool();
    runs.push_back(std::move(run));
  }

  reuse::ReuseRecallOracle recall_oracle(tuned.min_match_tokens);
  // The same, given each prompt chunk by chunk: which reusable windows a cached chunk could
  // hold at all (for the breakdown of recall losses).
  reuse::ReuseRecallOracle chunk_window_oracle(tuned.min_match_tokens);
  const auto remember = [&](const ReuseSession& session) {
    const std::vector<int32_t>& tokens = session.prompt_tokens();
    recall_oracle.Add(tokens);
    for (const reuse::PromptChunk& c : session.prompt_chunks()) {
      chunk_window_oracle.Add(std::span<const int32_t>(tokens).subspan(
          static_cast<size_t>(c.begin), static_cast<size_t>(c.end - c.begin)));
    }
  };
  if (options.warm_corpus || options.warm_retrieved_only) {
    std::vector<workload::Segment> warm = work.collection;
    if (options.warm_retrieved_only) {
      warm.clear();
      std::set<std::string> seen;
      for (const workload::Request& r : work.requests) {
        for (const auto* segments : {&r.segments, &r.pasted}) {
          for (const workload::Segment& s : *segments) {
            if (workload::IsContextRole(s.role) && seen.insert(s.source_id).second) {
              warm.push_back(s);
            }
          }
        }
      }
    }
    say("warming the caches with " + std::to_string(warm.size()) + " collection segments");
    // Each segment is computed once, alone (as an offline indexer would), and the same entries
    // go into every method's cache.
    MethodRun* first = nullptr;
    for (MethodRun& run : runs) {
      if (run.cache && !first) first = &run;
    }
    int64_t num_warmed = 0;
    for (const workload::Segment& segment : warm) {
      if (!first) break;
      ReportProgress(options.progress, "warming", num_warmed++, static_cast<int64_t>(warm.size()),
                     "segments");
      const PromptSegment one[] = {{segment.role, segment.text}};
      REPRISE_RETURN_IF_ERROR(first->session->Prefill(one));
      REPRISE_RETURN_IF_ERROR(first->session->StoreChunks());
      remember(*first->session);
      for (kv::ChunkId id : first->session->chunk_ids()) {
        std::shared_ptr<const kv::ChunkEntry> entry = first->cache->Find(id);
        if (!entry) continue;
        for (MethodRun& run : runs) {
          if (run.cache && &run != first) REPRISE_RETURN_IF_ERROR(run.cache->Insert(entry));
        }
      }
    }
    if (first) {
      ReportProgress(options.progress, "warming", num_warmed, num_warmed, "segments");
      const kv::ChunkCacheStats warmed = first->cache->stats();
      char line[256];
      std::snprintf(line, sizeof(line),
                    "warm caches hold %lld chunks, %.1f MiB of a %.1f MiB budget",
                    static_cast<long long>(warmed.num_chunks), warmed.bytes / 1048576.0,
                    warmed.budget_bytes / 1048576.0);
      say(line);
      if (warmed.evictions > 0 && !store) {
        say("warning: the cache budget evicted " + std::to_string(warmed.evictions) +
            " chunks while warming; the corpus does not fit (raise --cache-mb)");
      }
    }
  }

  ReuseBenchResult result;
  result.calibration = "Lp " + std::to_string(tuned.prefill_capacity) + ", Ls " +
                       std::to_string(tuned.recompute_capacity) + ", r " +
                       std::to_string(tuned.recompute_ratio).substr(0, 5) + " " + calibration_note;
  if (tuned.static_shapes) result.calibration += ", static shapes";
  if (std::find(options.methods.begin(), options.methods.end(), engine::ReuseMethod::kBlend) !=
      options.methods.end()) {
    result.calibration +=
        std::string(", scheduler ") + engine::ScheduleStrategyName(tuned.scheduler);
  }
  result.workload = work.name + (options.warm_corpus           ? " (warm corpus)"
                                 : options.warm_retrieved_only ? " (retrieved documents pre-cached)"
                                                               : "");
  result.model = options.model_path;
  result.workload_stats = workload::FormatWorkloadStats(work.stats);
  double prompt_tokens = 0;
  result.recall_window = recall_oracle.window();
  std::vector<int32_t> query_tokens;   // this query's prompt, as the first method tokenized it
  std::vector<uint8_t> reusable_mask;  // and which of its tokens the oracle calls reusable
  std::vector<uint8_t> within_chunk_mask;
  const ReuseSession* first_session = nullptr;  // the session that ran it first
  const int64_t num_query_runs = static_cast<int64_t>(work.requests.size() * runs.size());
  int64_t query_runs_done = 0;
  for (size_t q = 0; q < work.requests.size(); ++q) {
    std::vector<PromptSegment> segments;
    for (const workload::Segment& s : work.requests[q].segments)
      segments.push_back({s.role, s.text});
    std::vector<float> oracle_logits;
    std::vector<int32_t> oracle_continuation;
    // The oracle runs first whatever the order asked for (`--methods blend,none`), so that every
    // other method is compared with it; results keep the asked order.
    std::vector<MethodRun*> order;
    for (MethodRun& run : runs) {
      order.insert(run.method == ReuseMethod::kNone ? order.begin() : order.end(), &run);
    }
    for (MethodRun* run_ptr : order) {
      MethodRun& run = *run_ptr;
      const std::string detail = "query " + std::to_string(q + 1) + "/" +
                                 std::to_string(work.requests.size()) + " " +
                                 ReuseMethodName(run.method);
      ReportProgress(options.progress, "queries", query_runs_done++, num_query_runs, "runs",
                     detail);
      if (store && options.cold_flash) {
        REPRISE_RETURN_IF_ERROR(store->Flush());
        Result<int> dropped = store::DropKvFilePages(options.store_dir);
        if (!dropped.ok()) return dropped.error();
      }
      const double caller_writes_before = store ? store->Stats().write_ms_on_caller : 0.0;
      REPRISE_ASSIGN_OR_RETURN(PrefillReport report, run.session->Prefill(segments));
      if (store) {
        run.stats.store_write_ms_on_ttft_path +=
            store->Stats().write_ms_on_caller - caller_writes_before;
      }
      const std::vector<float> logits(run.session->logits().begin(), run.session->logits().end());
      // Every method sees the same prompt: count it once, from the first.
      if (run_ptr == order.front()) {
        prompt_tokens += report.prompt_tokens;
        query_tokens = run.session->prompt_tokens();
        reusable_mask = recall_oracle.ReusableMask(query_tokens);
        within_chunk_mask = chunk_window_oracle.ReusableMask(query_tokens);
        first_session = run.session.get();
        const int reusable =
            static_cast<int>(std::count(reusable_mask.begin(), reusable_mask.end(), uint8_t{1}));
        result.tokens_reusable += reusable;
        result.tokens_reusable_per_query.push_back(reusable);
      }
      // Where this method's recall was lost: against the cache as it was planned against,
      // before this prompt's chunks go in (methods that reuse beyond the prefix; `prefix`
      // leaves everything else new by design).
      if (run.cache && run.method != ReuseMethod::kPrefix) {
        REPRISE_ASSIGN_OR_RETURN(
            reuse::RecallLosses losses,
            reuse::ClassifyRecallLosses(
                {query_tokens, run.session->planned_kinds(), run.session->prompt_chunks(),
                 reusable_mask, recall_oracle.window(), run.session->options().max_candidates,
                 within_chunk_mask},
                *run.cache));
        run.stats.recall_losses += losses;
        if (options.verbose && losses.total() > 0) {
          say("query " + std::to_string(q) + " " + ReuseMethodName(run.method) +
              " reusable tokens left new: " + losses.Summary());
        }
      }
      REPRISE_ASSIGN_OR_RETURN(double store_ms, run.session->StoreChunks());
      if (run.cache) run.cache->RunIdleWork();
      std::vector<int32_t> continuation;
      if (options.measure_quality) {
        REPRISE_ASSIGN_OR_RETURN(continuation, Continue(*run.session, options.continuation_tokens));
      }
      if (run.method == ReuseMethod::kNone) {
        oracle_logits = logits;
        oracle_continuation = continuation;
      }
      if (options.measure_quality) {
        const std::string& id = work.requests[q].id;
        const size_t hash = id.find('#');
        if (hash != std::string::npos) {
          run.continuations_by_group[id.substr(0, hash)].push_back(continuation);
        }
      }
      const int reusable = result.tokens_reusable_per_query.back();
      MethodStats& st = run.stats;
      ++st.queries;
      st.ttft_ms.push_back(report.ttft_ms);
      st.tokens_prefix += report.tokens_prefix;
      st.tokens_nonprefix += report.tokens_nonprefix;
      st.tokens_recomputed += report.tokens_recomputed;
      st.tokens_new += report.tokens_new;
      if (run.cache) {
        const int found = report.tokens_prefix + report.tokens_nonprefix + report.tokens_recomputed;
        st.tokens_found += found;
        const size_t window = static_cast<size_t>(st.queries - 1) / kRecallWindowQueries;
        if (run.window_found.size() <= window) {
          run.window_found.resize(window + 1, 0);
          run.window_reusable.resize(window + 1, 0);
        }
        run.window_found[window] += found;
        run.window_reusable[window] += reusable;
        st.reuse_recall_per_query.push_back(reusable > 0 ? static_cast<double>(found) / reusable
                                                         : -1.0);
      }
      run.match_sum += report.match_ms;
      run.prep_sum += report.kv_prep_ms;
      run.place_sum += report.kv_place_ms;
      run.load_wait_sum += report.kv_load_wait_ms;
      run.compute_sum += report.compute_ms;
      run.calls_sum += report.graph_calls;
      run.store_sum += store_ms;
      st.guard_fallbacks += report.guard_fallbacks;
      run.residual_sum += report.max_residual_deviation;
      const double kl = options.measure_quality ? SoftmaxKl(oracle_logits, logits) : 0.0;
      if (options.measure_quality) {
        run.kl_sum += kl;
        run.top1_sum += Argmax(oracle_logits) == Argmax(logits);
        int agree = 0;
        while (agree < options.continuation_tokens &&
               continuation[static_cast<size_t>(agree)] ==
                   oracle_continuation[static_cast<size_t>(agree)]) {
          ++agree;
        }
        run.continuation_sum += static_cast<double>(agree) / options.continuation_tokens;
        st.kl_per_query.push_back(kl);
        st.continuation_per_query.push_back(static_cast<double>(agree) /
                                            options.continuation_tokens);
      }
      if (options.verbose) {
        char line[384];
        int used = std::snprintf(line, sizeof(line), "query %zu %-6s TTFT %8.1f ms  %s", q,
                                 ReuseMethodName(run.method), report.ttft_ms, report.plan.c_str());
        if (run.method == ReuseMethod::kBlend && used > 0 &&
            used < static_cast<int>(sizeof(line))) {
          used += std::snprintf(line + used, sizeof(line) - static_cast<size_t>(used),
                                " | residual deviation %.3g%s", report.max_residual_deviation,
                                report.guard_fallbacks > 0 ? " (guard fell back)" : "");
        }
        if (options.measure_quality && used > 0 && used < static_cast<int>(sizeof(line))) {
          std::snprintf(line + used, sizeof(line) - static_cast<size_t>(used), " | KL %.5f", kl);
        }
        say(line);
        if (!report.schedule.empty()) say(report.schedule);
      }
    }
    if (first_session) remember(*first_session);
    ReportProgress(options.progress, "queries", query_runs_done, num_query_runs, "runs");
    char line[160];
    std::snprintf(line, sizeof(line), "query %zu/%zu done (%d prompt tokens)", q + 1,
                  work.requests.size(),
                  static_cast<int>(prompt_tokens / static_cast<double>(q + 1)));
    say(line);
  }
  const double none_mean = [&] {
    for (MethodRun& run : runs) {
      if (run.method == ReuseMethod::kNone && !run.stats.ttft_ms.empty()) {
        double s = 0;
        for (double t : run.stats.ttft_ms) s += t;
        return s / static_cast<double>(run.stats.ttft_ms.size());
      }
    }
    return 0.0;
  }();
  for (MethodRun& run : runs) {
    if (std::find(options.methods.begin(), options.methods.end(), run.method) ==
        options.methods.end()) {
      continue;  // the oracle was added for quality only
    }
    MethodStats& st = run.stats;
    const double n = std::max(1, st.queries);
    double sum = 0;
    for (double t : st.ttft_ms) sum += t;
    st.ttft_ms_mean = sum / n;
    st.ttft_ms_p50 = Percentile(st.ttft_ms, 0.5);
    st.ttft_ms_p90 = Percentile(st.ttft_ms, 0.9);
    st.speedup_vs_none = st.ttft_ms_mean > 0 ? none_mean / st.ttft_ms_mean : 0;
    st.kl_mean = run.kl_sum / n;
    st.top1_agreement = run.top1_sum / n;
    st.continuation_agreement = run.continuation_sum / n;
    int stable = 0;
    for (const auto& [group, continuations] : run.continuations_by_group) {
      if (continuations.size() < 2) continue;
      ++st.order_groups;
      stable += std::all_of(continuations.begin(), continuations.end(),
                            [&](const auto& c) { return c == continuations.front(); });
    }
    if (st.order_groups > 0) st.order_stability = static_cast<double>(stable) / st.order_groups;
    if (!st.kl_per_query.empty()) {
      std::vector<double> kl = st.kl_per_query, cont = st.continuation_per_query;
      std::sort(kl.begin(), kl.end());
      std::sort(cont.begin(), cont.end());
      const auto at = [](const std::vector<double>& v, double q) {
        return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
      };
      st.kl_p95 = at(kl, 0.95);
      st.kl_max = kl.back();
      st.continuation_p10 = at(cont, 0.10);
    }
    st.match_ms_mean = run.match_sum / n;
    st.kv_prep_ms_mean = run.prep_sum / n;
    st.compute_ms_mean = run.compute_sum / n;
    st.graph_calls_mean = run.calls_sum / n;
    st.overhead_ms_mean = st.match_ms_mean + st.kv_prep_ms_mean;
    st.background_place_ms_mean = run.place_sum / n;
    st.background_load_wait_ms_mean = run.load_wait_sum / n;
    const int64_t executed = st.tokens_recomputed + st.tokens_nonprefix;
    st.recompute_fraction =
        executed > 0 ? static_cast<double>(st.tokens_recomputed) / static_cast<double>(executed)
                     : 0.0;
    st.store_ms_mean = run.store_sum / n;
    st.residual_deviation_mean = run.residual_sum / n;
    st.reuse_recall = result.tokens_reusable > 0 && run.cache
                          ? static_cast<double>(st.tokens_found) / result.tokens_reusable
                          : 0.0;
    for (size_t w = 0; w < run.window_found.size(); ++w) {
      st.reuse_recall_by_window.push_back(run.window_reusable[w] > 0
                                              ? static_cast<double>(run.window_found[w]) /
                                                    run.window_reusable[w]
                                              : 0.0);
    }
    if (run.cache) {
      const kv::ChunkCacheStats cs = run.cache->stats();
      st.cache_chunks = cs.num_chunks;
      st.cache_bytes = cs.bytes;
      st.cache_evictions = cs.evictions;
      st.hits_pool = cs.hits_pool;
      st.hits_flash = cs.hits_flash;
    }
    result.methods.push_back(st);
  }
  result.queries = static_cast<int>(work.requests.size());
  result.guard_deviation = tuned.guard_deviation;
  result.selection = engine::SelectionName(options.reuse.selection);
  result.static_shapes = options.reuse.static_shapes;
  result.scheduler = engine::ScheduleStrategyName(options.reuse.scheduler);
  if (store) {
    REPRISE_RETURN_IF_ERROR(store->Flush());
    const store::StoreStats ss = store->Stats();
    char line[512];
    std::snprintf(
        line, sizeof(line),
        "store %s: %lld chunks, %.1f MiB on disk, %.1f MiB in memory; %lld written by "
        "the write-back thread in %.0f ms (off the TTFT path); evictions: %lld memory, "
        "%lld flash; %lld prefetched; %lld corrupt dropped%s%s",
        options.store_dir.c_str(), static_cast<long long>(ss.chunks), ss.bytes_on_disk / 1048576.0,
        ss.bytes_in_pool / 1048576.0, static_cast<long long>(ss.chunks_written), ss.write_ms_total,
        static_cast<long long>(ss.pool_evictions), static_cast<long long>(ss.flash_evictions),
        static_cast<long long>(ss.prefetched), static_cast<long long>(ss.corrupt_dropped),
        ss.persistence_enabled ? "" : "; not persisting: ", ss.persistence_error.c_str());
    result.store = line;
    if (options.store_admit_after > 1) {
      std::snprintf(line, sizeof(line),
                    "; admission after %d sightings: %lld admitted on recurrence, %lld dropped "
                    "unwritten, %lld waiting in memory",
                    options.store_admit_after, static_cast<long long>(ss.admitted_on_recurrence),
                    static_cast<long long>(ss.dropped_unadmitted),
                    static_cast<long long>(ss.chunks_awaiting_admission));
      result.store += line;
    }
  }
  result.prompt_tokens_mean = prompt_tokens / std::max<double>(1, result.queries);
  return result;
}

std::string ReuseBenchResult::ToJson() const {
  nlohmann::json j;
  j["workload"] = workload;
  j["model"] = model;
  j["queries"] = queries;
  j["prompt_tokens_mean"] = prompt_tokens_mean;
  j["graphs"] = calibration;
  j["guard_deviation"] = guard_deviation;  // 0 = off
  j["selection"] = selection;
  j["static_shapes"] = static_shapes;
  j["scheduler"] = scheduler;
  nlohmann::json m = nlohmann::json::object();
  for (const MethodStats& s : methods) {
    m[s.method] = {{"ttft_ms_mean", s.ttft_ms_mean},
                   {"ttft_ms_p50", s.ttft_ms_p50},
                   {"ttft_ms_p90", s.ttft_ms_p90},
                   {"speedup_vs_none", s.speedup_vs_none},
                   {"kl_mean", s.kl_mean},
                   {"kl_p95", s.kl_p95},
                   {"order_groups", s.order_groups},
                   {"order_stability", s.order_stability},
                   {"kl_max", s.kl_max},
                   {"continuation_p10", s.continuation_p10},
                   {"kl_per_query", s.kl_per_query},
                   {"continuation_per_query", s.continuation_per_query},
                   {"top1_agreement", s.top1_agreement},
                   {"continuation_agreement", s.continuation_agreement},
                   {"tokens_prefix", s.tokens_prefix},
                   {"tokens_nonprefix", s.tokens_nonprefix},
                   {"tokens_recomputed", s.tokens_recomputed},
                   {"tokens_new", s.tokens_new},
                   {"overhead_ms_mean", s.overhead_ms_mean},
                   {"match_ms_mean", s.match_ms_mean},
                   {"kv_prep_ms_mean", s.kv_prep_ms_mean},
                   {"exposed_kv_ms_mean", s.kv_prep_ms_mean},
                   {"background_place_ms_mean", s.background_place_ms_mean},
                   {"background_load_wait_ms_mean", s.background_load_wait_ms_mean},
                   {"recompute_fraction", s.recompute_fraction},
                   {"graph_calls_mean", s.graph_calls_mean},
                   {"compute_ms_mean", s.compute_ms_mean},
                   {"store_ms_mean", s.store_ms_mean},
                   {"cache_chunks", s.cache_chunks},
                   {"hits_pool", s.hits_pool},
                   {"hits_flash", s.hits_flash},
                   {"store_write_ms_on_ttft_path", s.store_write_ms_on_ttft_path},
                   {"guard_fallbacks", s.guard_fallbacks},
                   {"residual_deviation_mean", s.residual_deviation_mean},
                   {"cache_bytes", s.cache_bytes},
                   {"cache_evictions", s.cache_evictions},
                   {"tokens_found", s.tokens_found},
                   {"reuse_recall", s.reuse_recall},
                   {"reuse_recall_per_query", s.reuse_recall_per_query},
                   {"reuse_recall_by_window", s.reuse_recall_by_window},
                   {"reuse_recall_losses",
                    {{"last_token", s.recall_losses.last_token},
                     {"matcher", s.recall_losses.matcher},
                     {"candidates_capped", s.recall_losses.candidates_capped},
                     {"prompt_chunk_split", s.recall_losses.prompt_chunk_split},
                     {"seam", s.recall_losses.seam},
                     {"cached_chunk_split", s.recall_losses.cached_chunk_split},
                     {"not_cached", s.recall_losses.not_cached}}}};
  }
  j["methods"] = m;
  j["recall_window"] = recall_window;
  j["tokens_reusable"] = tokens_reusable;
  j["tokens_reusable_per_query"] = tokens_reusable_per_query;
  if (!store.empty()) j["store"] = store;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ReuseBenchResult::ToText() const {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line),
                "workload %s, %d queries, %.0f prompt tokens on average\nmodel %s\ngraphs %s\n\n",
                workload.c_str(), queries, prompt_tokens_mean, model.c_str(), calibration.c_str());
  s += line;
  std::snprintf(line, sizeof(line), "%-7s %9s %9s %9s %8s %9s %6s %6s %7s %7s %7s %7s %8s %8s\n",
                "method", "TTFT ms", "p50", "p90", "speedup", "KL", "top1", "cont", "prefix",
                "reused", "recomp", "new", "overhd%", "compute");
  s += line;
  for (const MethodStats& m : methods) {
    std::snprintf(
        line, sizeof(line),
        "%-7s %9.1f %9.1f %9.1f %7.2fx %9.5f %6.3f %6.3f %7lld %7lld %7lld %7lld %7.2f%% %8.1f\n",
        m.method.c_str(), m.ttft_ms_mean, m.ttft_ms_p50, m.ttft_ms_p90, m.speedup_vs_none,
        m.kl_mean, m.top1_agreement, m.continuation_agreement,
        static_cast<long long>(m.tokens_prefix), static_cast<long long>(m.tokens_nonprefix),
        static_cast<long long>(m.tokens_recomputed), static_cast<long long>(m.tokens_new),
        m.ttft_ms_mean > 0 ? 100.0 * m.overhead_ms_mean / m.ttft_ms_mean : 0.0, m.compute_ms_mean);
    s += line;
  }
  s += "\n(tokens are totals over the run; reused = non-prefix reused and not recomputed; "
       "overhead = matching + KV preparation as a share of TTFT)\n";
  s += "time split, mean ms: match | waiting for reused KV | compute (beside the graphs: "
       "placing KV, waiting for reads); graph calls per query:\n";
  for (const MethodStats& m : methods) {
    std::snprintf(line, sizeof(line), "  %-6s %.1f | %.1f | %.1f  (%.1f, %.1f); %.1f calls\n",
                  m.method.c_str(), m.match_ms_mean, m.kv_prep_ms_mean, m.compute_ms_mean,
                  m.background_place_ms_mean, m.background_load_wait_ms_mean, m.graph_calls_mean);
    s += line;
  }
  if (tokens_reusable > 0) {
    std::snprintf(line, sizeof(line),
                  "reuse recall (tokens found in the cache / %lld reusable by the oracle: "
                  "%d-token windows seen earlier in the run):",
                  static_cast<long long>(tokens_reusable), recall_window);
    s += line;
    for (const MethodStats& m : methods) {
      if (m.method == "none") continue;
      std::snprintf(line, sizeof(line), " %s %.1f%%", m.method.c_str(), 100.0 * m.reuse_recall);
      s += line;
    }
    if (queries >= 2 * kRecallWindowQueries) {
      std::snprintf(line, sizeof(line), "\nreuse recall by %d-query window:", kRecallWindowQueries);
      s += line;
      for (const MethodStats& m : methods) {
        if (m.method == "none") continue;
        s += " " + m.method;
        for (const double r : m.reuse_recall_by_window) {
          std::snprintf(line, sizeof(line), " %.1f%%", 100.0 * r);
          s += line;
        }
      }
    }
    s += "\nreusable tokens left new, by cause (reuse/reuse_recall_losses.h):\n";
    for (const MethodStats& m : methods) {
      if (m.method == "none" || m.method == "prefix") continue;
      std::snprintf(line, sizeof(line),
                    "  %-6s %s (cache evictions: %lld); matching %.1f ms = %.2f%% of TTFT\n",
                    m.method.c_str(), m.recall_losses.Summary().c_str(),
                    static_cast<long long>(m.cache_evictions), m.match_ms_mean,
                    m.ttft_ms_mean > 0 ? 100.0 * m.match_ms_mean / m.ttft_ms_mean : 0.0);
      s += line;
    }
  }
  bool any_quality = false;
  for (const MethodStats& m : methods) any_quality = any_quality || !m.kl_per_query.empty();
  if (any_quality) {
    s += "quality per query: KL p95 / worst, continuation agreement p10:";
    for (const MethodStats& m : methods) {
      if (m.method == "none" || m.kl_per_query.empty()) continue;
      std::snprintf(line, sizeof(line), " %s %.5f / %.5f, %.3f;", m.method.c_str(), m.kl_p95,
                    m.kl_max, m.continuation_p10);
      s += line;
    }
    s += "\n";
  }
  bool any_groups = false;
  for (const MethodStats& m : methods) any_groups = any_groups || m.order_groups > 0;
  if (any_groups) {
    s += "answers unchanged under every order of the same documents (question groups):";
    for (const MethodStats& m : methods) {
      if (m.order_groups == 0) continue;
      std::snprintf(line, sizeof(line), " %s %.0f%% of %d;", m.method.c_str(),
                    100.0 * m.order_stability, m.order_groups);
      s += line;
    }
    s += "\n";
  }
  for (const MethodStats& m : methods) {
    if (m.method != "blend") continue;
    char guard[64] = "off";
    if (guard_deviation > 0) std::snprintf(guard, sizeof(guard), "at %g", guard_deviation);
    std::snprintf(line, sizeof(line),
                  "blend (selection by %s): residual deviation %.3g (mean of each query's "
                  "largest); quality guard %s: %lld recompute calls fell back to prefill\n",
                  selection.c_str(), m.residual_deviation_mean, guard,
                  static_cast<long long>(m.guard_fallbacks));
    s += line;
  }
  bool any_store = !store.empty();
  if (any_store) {
    s += "\nchunk hits (memory / flash):";
    for (const MethodStats& m : methods) {
      if (m.method == "none") continue;
      s += " " + m.method + " " + std::to_string(m.hits_pool) + "/" + std::to_string(m.hits_flash);
    }
    s += "\n" + store + "\n";
  }
  s += "\n" + workload_stats;
  return s;
}

}  // namespace reprise::tools
