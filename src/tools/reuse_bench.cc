#include "tools/reuse_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "engine/recall_probe.h"
#include "reuse/reuse_recall_oracle.h"
#include "tools/request_recall_oracle.h"
#include "workload/named_workload.h"

namespace reprise::tools {
namespace {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double index = p * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(index));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (values[hi] - values[lo]) * (index - static_cast<double>(lo));
}

int32_t Argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::string NamespaceOf(ReuseMethod method) {
  return std::string("bench-") + ReuseMethodName(method);
}

struct MethodRun {
  ReuseMethod method;
  std::unique_ptr<Session> session;
  bool has_cache = false;
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
  const auto has = [&](ReuseMethod m) {
    return std::find(options.methods.begin(), options.methods.end(), m) != options.methods.end();
  };
  REPRISE_ASSIGN_OR_RETURN(const ModelInfo info, ReadModelInfo(options.model_path));
  EngineOptions engine_options = options.engine;
  engine_options.model_path = options.model_path;
  const int asked_context =
      engine_options.context_tokens > 0 ? engine_options.context_tokens : info.context_length;
  engine_options.context_tokens = std::min(asked_context, info.context_length);
  engine_options.tuning.chunk_tokens =
      std::min(engine_options.tuning.chunk_tokens, options.chunk_tokens);
  // The engine's own method makes the caches (and, for blend, resolves the quality guard: the
  // model's calibrated threshold unless one was given, measured once when missing); each
  // method runs in a session of its own.
  engine_options.reuse = has(ReuseMethod::kBlend)    ? ReuseMethod::kBlend
                         : has(ReuseMethod::kFull)   ? ReuseMethod::kFull
                         : has(ReuseMethod::kPrefix) ? ReuseMethod::kPrefix
                                                     : ReuseMethod::kNone;
  if (!has(ReuseMethod::kBlend)) engine_options.quality_guard = 0.0;  // nothing to guard
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(engine_options));
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<PromptTokenizer> tokenizer,
                           PromptTokenizer::Open(options.model_path));
  const int context = engine->context_tokens();

  workload::WorkloadOptions wl;
  wl.data_dir = options.data_dir;
  wl.docqa_file = options.docqa_file;
  wl.num_queries = options.num_queries;
  wl.top_chunks = options.top_chunks;
  wl.chunk_tokens = options.chunk_tokens;
  wl.max_prompt_tokens = options.max_prompt_tokens > 0 ? options.max_prompt_tokens
                                                       : context - options.continuation_tokens - 8;
  wl.count_tokens = [&engine](std::string_view text) {
    return static_cast<int>(
        engine->Tokenize(text, /*add_special=*/false, /*parse_special=*/false).size());
  };
  wl.max_catalog_skills = options.max_catalog_skills;
  REPRISE_ASSIGN_OR_RETURN(workload::Workload work,
                           workload::BuildNamedWorkload(options.workload, wl));
  say("workload " + work.name + ": " + std::to_string(work.requests.size()) + " requests");

  const bool given_capacities =
      options.engine.prefill_capacity > 0 || options.engine.recompute_capacity > 0;
  const std::string calibration_note =
      options.engine.calibration_dir.empty() || given_capacities ? "(given)"
      : engine->is_calibrated()                                  ? "(calibrated)"
                                : "(defaults; run `reprise calibrate` to tune)";

  // The oracle (full prefill) always runs, for quality; it is also the `none` method.
  std::vector<ReuseMethod> methods = options.methods;
  if (options.measure_quality && !has(ReuseMethod::kNone)) {
    methods.insert(methods.begin(), ReuseMethod::kNone);
  }
  const bool with_store = !options.engine.store_dir.empty();
  std::vector<MethodRun> runs;
  for (ReuseMethod method : methods) {
    MethodRun run;
    run.method = method;
    run.stats.method = ReuseMethodName(method);
    run.has_cache = method != ReuseMethod::kNone;
    REPRISE_ASSIGN_OR_RETURN(run.session, engine->OpenSession({NamespaceOf(method), method}));
    runs.push_back(std::move(run));
  }

  const int window = options.engine.tuning.min_match_tokens;
  reuse::ReuseRecallOracle recall_oracle(window);
  // The same, given each prompt chunk by chunk: which reusable windows a cached chunk could
  // hold at all (for the breakdown of recall losses).
  reuse::ReuseRecallOracle chunk_window_oracle(window);
  const auto remember = [&](const GenerateResult& ran) {
    const std::vector<int32_t>& tokens = ran.prompt_tokens;
    recall_oracle.Add(tokens);
    for (const auto& [begin, end] : ran.diagnostics.chunks) {
      chunk_window_oracle.Add(std::span<const int32_t>(tokens).subspan(
          static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
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
    // Each segment is computed once per cache, alone and exactly (as an offline indexer would:
    // a prefix session), so every method's cache holds the same entries.
    std::vector<std::unique_ptr<Session>> warmers;
    for (const MethodRun& run : runs) {
      if (!run.has_cache) continue;
      REPRISE_ASSIGN_OR_RETURN(
          std::unique_ptr<Session> warmer,
          engine->OpenSession({NamespaceOf(run.method), ReuseMethod::kPrefix}));
      warmers.push_back(std::move(warmer));
    }
    int64_t num_warmed = 0;
    for (const workload::Segment& segment : warm) {
      if (warmers.empty()) break;
      ReportProgress(options.progress, "warming", num_warmed++, static_cast<int64_t>(warm.size()),
                     "segments");
      GenerateRequest one;
      one.segments = {{segment.role, segment.text}};
      one.max_new_tokens = 1;
      one.diagnose = true;
      for (size_t w = 0; w < warmers.size(); ++w) {
        REPRISE_ASSIGN_OR_RETURN(const GenerateResult warmed, warmers[w]->Generate(one));
        if (w == 0) remember(warmed);
      }
    }
    if (!warmers.empty()) {
      ReportProgress(options.progress, "warming", num_warmed, num_warmed, "segments");
      REPRISE_ASSIGN_OR_RETURN(const NamespaceStats warmed,
                               engine->StatsOf(warmers.front()->name_space()));
      char line[256];
      std::snprintf(line, sizeof(line),
                    "warm caches hold %lld chunks, %.1f MiB of a %.1f MiB budget",
                    static_cast<long long>(warmed.chunks), warmed.bytes / 1048576.0,
                    static_cast<double>(options.engine.cache_mb));
      say(line);
      if (warmed.evictions > 0 && !with_store) {
        say("warning: the cache budget evicted " + std::to_string(warmed.evictions) +
            " chunks while warming; the corpus does not fit (raise --cache-mb)");
      }
    }
  }

  ReuseBenchResult result;
  result.calibration = "Lp " + std::to_string(engine->prefill_capacity()) + ", Ls " +
                       std::to_string(engine->recompute_capacity()) + ", r " +
                       std::to_string(options.engine.recompute_ratio).substr(0, 5) + " " +
                       calibration_note;
  if (options.engine.static_shapes) result.calibration += ", static shapes";
  if (has(ReuseMethod::kBlend)) {
    result.calibration +=
        std::string(", scheduler ") + ScheduleStrategyName(options.engine.tuning.scheduler);
  }
  result.workload = work.name + (options.warm_corpus           ? " (warm corpus)"
                                 : options.warm_retrieved_only ? " (retrieved documents pre-cached)"
                                                               : "");
  result.model = options.model_path;
  result.workload_stats = workload::FormatWorkloadStats(work.stats);
  double prompt_tokens = 0;
  result.recall_window = recall_oracle.window();
  const int64_t num_query_runs = static_cast<int64_t>(work.requests.size() * runs.size());
  int64_t query_runs_done = 0;
  for (size_t q = 0; q < work.requests.size(); ++q) {
    GenerateRequest request;
    for (const workload::Segment& s : work.requests[q].segments) {
      request.segments.push_back({s.role, s.text});
    }
    request.max_new_tokens = options.measure_quality ? options.continuation_tokens : 1;
    request.temperature = 0.0f;
    request.ignore_eos = true;
    request.return_first_token_logits = true;
    request.diagnose = true;
    // This query's prompt, and which of its tokens the oracle calls reusable.
    const std::vector<int32_t> query_tokens = tokenizer->PromptTokens(request);
    const std::vector<uint8_t> reusable_mask = recall_oracle.ReusableMask(query_tokens);
    const std::vector<uint8_t> within_chunk_mask = chunk_window_oracle.ReusableMask(query_tokens);
    const int reusable =
        static_cast<int>(std::count(reusable_mask.begin(), reusable_mask.end(), uint8_t{1}));
    result.tokens_reusable += reusable;
    result.tokens_reusable_per_query.push_back(reusable);
    prompt_tokens += static_cast<double>(query_tokens.size());
    std::vector<float> oracle_logits;
    std::vector<int32_t> oracle_continuation;
    std::optional<GenerateResult> first_result;  // the query's first run, for the oracle
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
      if (with_store && options.cold_flash) {
        REPRISE_RETURN_IF_ERROR(engine->DropStoreFromPageCache());
      }
      const double caller_writes_before = with_store ? engine->Stats().write_ms_on_caller : 0.0;
      // Where this method's recall was lost: against the cache as it was planned against,
      // before this prompt's chunks go in (methods that reuse beyond the prefix; `prefix`
      // leaves everything else new by design).
      engine::RecallProbe probe{reusable_mask, within_chunk_mask, window};
      const bool diagnose_recall = run.has_cache && run.method != ReuseMethod::kPrefix;
      REPRISE_ASSIGN_OR_RETURN(GenerateResult ran, diagnose_recall
                                                       ? probe.Generate(*run.session, request)
                                                       : run.session->Generate(request));
      if (ran.prompt_tokens != query_tokens) {
        return InternalError("the engine ran other prompt tokens than PromptTokenizer gave");
      }
      if (with_store) {
        run.stats.store_write_ms_on_ttft_path +=
            engine->Stats().write_ms_on_caller - caller_writes_before;
      }
      const ReuseReport& report = ran.reuse;
      const ReuseDiagnostics& d = ran.diagnostics;
      if (probe.classified) {
        run.stats.recall_losses += probe.losses;
        if (options.verbose && probe.losses.total() > 0) {
          say("query " + std::to_string(q) + " " + ReuseMethodName(run.method) +
              " reusable tokens left new: " + reuse::DescribeRecallLosses(probe.losses));
        }
      }
      const std::vector<float>& logits = ran.first_token_logits;
      std::vector<int32_t> continuation;
      if (options.measure_quality) continuation = ran.generated_tokens;
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
      MethodStats& st = run.stats;
      ++st.queries;
      st.ttft_ms.push_back(ran.ttft_ms);
      st.tokens_prefix += report.tokens_prefix;
      st.tokens_nonprefix += report.tokens_reused;
      st.tokens_recomputed += report.tokens_recomputed;
      st.tokens_stable += report.tokens_stable;
      st.tokens_new += report.tokens_new;
      if (run.has_cache) {
        // Found ∩ reusable, token by token: the plan may take tokens that the oracle does not
        // count (a cached start shorter than a window, chunks of an earlier run's store).
        const auto found = static_cast<int>(CountReusableIn<int>(reusable_mask, report.found_runs));
        st.tokens_found += found;
        const size_t w = static_cast<size_t>(st.queries - 1) / kRecallWindowQueries;
        if (run.window_found.size() <= w) {
          run.window_found.resize(w + 1, 0);
          run.window_reusable.resize(w + 1, 0);
        }
        run.window_found[w] += found;
        run.window_reusable[w] += reusable;
        st.reuse_recall_per_query.push_back(reusable > 0 ? static_cast<double>(found) / reusable
                                                         : -1.0);
      }
      run.match_sum += report.match_ms;
      run.prep_sum += report.kv_prep_ms;
      run.place_sum += d.kv_place_ms;
      run.load_wait_sum += d.kv_load_wait_ms;
      run.compute_sum += report.compute_ms;
      run.calls_sum += d.graph_calls;
      run.store_sum += d.store_ms;
      st.guard_fallbacks += report.guard_fallbacks;
      run.residual_sum += d.max_residual_deviation;
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
                                 ReuseMethodName(run.method), ran.ttft_ms, d.plan.c_str());
        if (run.method == ReuseMethod::kBlend && used > 0 &&
            used < static_cast<int>(sizeof(line))) {
          used += std::snprintf(line + used, sizeof(line) - static_cast<size_t>(used),
                                " | residual deviation %.3g%s", d.max_residual_deviation,
                                report.guard_fallbacks > 0 ? " (guard fell back)" : "");
        }
        if (options.measure_quality && used > 0 && used < static_cast<int>(sizeof(line))) {
          std::snprintf(line + used, sizeof(line) - static_cast<size_t>(used), " | KL %.5f", kl);
        }
        say(line);
        if (!d.schedule.empty()) say(d.schedule);
      }
      if (!first_result) first_result = std::move(ran);
    }
    if (first_result) remember(*first_result);
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
    if (!has(run.method)) continue;  // the oracle was added for quality only
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
    st.reuse_recall = result.tokens_reusable > 0 && run.has_cache
                          ? static_cast<double>(st.tokens_found) / result.tokens_reusable
                          : 0.0;
    for (size_t w = 0; w < run.window_found.size(); ++w) {
      st.reuse_recall_by_window.push_back(run.window_reusable[w] > 0
                                              ? static_cast<double>(run.window_found[w]) /
                                                    run.window_reusable[w]
                                              : 0.0);
    }
    if (run.has_cache) {
      REPRISE_ASSIGN_OR_RETURN(const NamespaceStats cs, engine->StatsOf(NamespaceOf(run.method)));
      st.cache_chunks = cs.chunks;
      st.cache_bytes = cs.bytes;
      st.cache_evictions = cs.evictions;
      st.hits_pool = cs.hits_memory;
      st.hits_flash = cs.hits_flash;
    }
    result.methods.push_back(st);
  }
  result.queries = static_cast<int>(work.requests.size());
  result.guard_deviation = has(ReuseMethod::kBlend) ? engine->quality_guard() : 0.0;
  result.selection = TokenSelectionName(options.engine.token_selection);
  result.static_shapes = options.engine.static_shapes;
  result.scheduler = ScheduleStrategyName(options.engine.tuning.scheduler);
  if (with_store) {
    REPRISE_RETURN_IF_ERROR(engine->Flush());
    const EngineStats ss = engine->Stats();
    char line[512];
    std::snprintf(line, sizeof(line),
                  "store %s: %lld chunks, %.1f MiB on disk, %.1f MiB in memory; %lld written by "
                  "the write-back thread in %.0f ms (off the TTFT path); evictions: %lld memory, "
                  "%lld flash; %lld prefetched; %lld corrupt dropped%s%s",
                  options.engine.store_dir.c_str(), static_cast<long long>(ss.chunks),
                  ss.bytes_on_disk / 1048576.0, ss.bytes_in_memory / 1048576.0,
                  static_cast<long long>(ss.chunks_written), ss.write_ms_total,
                  static_cast<long long>(ss.pool_evictions),
                  static_cast<long long>(ss.flash_evictions), static_cast<long long>(ss.prefetched),
                  static_cast<long long>(ss.corrupt_dropped),
                  ss.persisting ? "" : "; not persisting: ", ss.persistence_error.c_str());
    result.store = line;
    if (options.engine.store_admit_after > 1) {
      std::snprintf(line, sizeof(line),
                    "; admission after %d sightings: %lld admitted on recurrence, %lld dropped "
                    "unwritten, %lld waiting in memory",
                    options.engine.store_admit_after,
                    static_cast<long long>(ss.admitted_on_recurrence),
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
                   {"tokens_stable", s.tokens_stable},
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
                    m.method.c_str(), reuse::DescribeRecallLosses(m.recall_losses).c_str(),
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
