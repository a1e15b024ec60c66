// The HTML reports of `reprise bench` (see bench_report.h).
#include "cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "cli/html_report.h"
#include "engine/calibration.h"

namespace reprise::cli {
namespace {

std::string Fixed(double v, int decimals) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f", decimals, v);
  return text;
}

void AddContext(HtmlReport& page, const ReportContext& context) {
  page.AddParagraph("Made by: " + context.command);
  page.AddParagraph("Machine: " + context.machine + "; " + context.time_utc + ".");
}

// The methods of the first run, in its order (every run has the same methods).
std::vector<std::string> MethodNames(std::span<const tools::ReuseBenchResult> results) {
  std::vector<std::string> names;
  if (!results.empty()) {
    for (const tools::MethodStats& m : results.front().methods) names.push_back(m.method);
  }
  return names;
}

const tools::MethodStats* FindMethod(const tools::ReuseBenchResult& result,
                                     const std::string& method) {
  for (const tools::MethodStats& m : result.methods) {
    if (m.method == method) return &m;
  }
  return nullptr;
}

// One value per method of `result`; NaN where the method did not run.
template <typename Get>
std::vector<double> PerMethod(const tools::ReuseBenchResult& result,
                              const std::vector<std::string>& methods, Get get) {
  std::vector<double> values;
  for (const std::string& method : methods) {
    const tools::MethodStats* m = FindMethod(result, method);
    values.push_back(m ? get(*m) : NAN);
  }
  return values;
}

// Whether any method's quality was measured (not --no-quality): `none` is the reference and
// agrees with itself, so measured quality shows as top-1 agreement above zero.
bool HasQuality(const tools::ReuseBenchResult& result) {
  for (const tools::MethodStats& m : result.methods) {
    if (m.top1_agreement > 0 || m.kl_mean > 0 || m.continuation_agreement > 0) return true;
  }
  return false;
}

void AddReuseRun(HtmlReport& page, const tools::ReuseBenchResult& r) {
  page.AddHeading("Workload " + r.workload);
  page.AddParagraph(std::to_string(r.queries) + " queries, " + Fixed(r.prompt_tokens_mean, 0) +
                    " prompt tokens on average; model " + r.model + "; graphs " + r.calibration +
                    ".");
  // One paragraph per line of the workload's statistics.
  for (size_t start = 0; start < r.workload_stats.size();) {
    size_t end = r.workload_stats.find('\n', start);
    if (end == std::string::npos) end = r.workload_stats.size();
    if (end > start) page.AddParagraph(r.workload_stats.substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::vector<std::string>> rows;
  for (const tools::MethodStats& m : r.methods) {
    rows.push_back({m.method, Fixed(m.ttft_ms_mean, 1), Fixed(m.ttft_ms_p50, 1),
                    Fixed(m.ttft_ms_p90, 1), Fixed(m.speedup_vs_none, 2) + "x", Fixed(m.kl_mean, 5),
                    Fixed(m.top1_agreement, 3), Fixed(m.continuation_agreement, 3),
                    std::to_string(m.tokens_prefix), std::to_string(m.tokens_nonprefix),
                    std::to_string(m.tokens_recomputed), std::to_string(m.tokens_new),
                    std::to_string(m.hits_pool), std::to_string(m.hits_flash)});
  }
  page.AddTable({"method", "TTFT ms", "p50", "p90", "speedup", "KL", "top-1", "continuation",
                 "prefix", "reused", "recomputed", "new", "memory hits", "flash hits"},
                rows);
  if (!r.store.empty()) page.AddParagraph(r.store);

  BarChart per_query{"TTFT per query: " + r.workload, "ms", {}, {}, false, 1280, 300};
  size_t num_queries = 0;
  for (const tools::MethodStats& m : r.methods)
    num_queries = std::max(num_queries, m.ttft_ms.size());
  for (size_t q = 0; q < num_queries; ++q) per_query.categories.push_back(std::to_string(q + 1));
  for (const tools::MethodStats& m : r.methods) {
    std::vector<double> values(num_queries, NAN);
    for (size_t q = 0; q < m.ttft_ms.size(); ++q) values[q] = m.ttft_ms[q];
    per_query.series.push_back({m.method, values});
  }
  page.AddChart(per_query,
                "Time to first token of each query (in run order), per method: the caches warm up "
                "as the run goes.");
}

}  // namespace

ReportContext CurrentReportContext(std::string command, int num_threads) {
  ReportContext context;
  context.command = std::move(command);
  context.machine = engine::MachineDescription(num_threads);
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", &utc);
  context.time_utc = text;
  return context;
}

std::string ReuseBenchReportHtml(std::span<const tools::ReuseBenchResult> results,
                                 const ReportContext& context) {
  HtmlReport page("Reprise: KV reuse benchmark");
  AddContext(page, context);
  const std::vector<std::string> methods = MethodNames(results);

  page.AddHeading("Summary");
  BarChart ttft{"Mean time to first token", "ms", methods, {}, false, 620, 300};
  BarChart split{"Where the time to first token goes (mean)", "ms", methods, {}, true, 620, 300};
  BarChart tokens{"Prompt tokens by kind (total)", "tokens", methods, {}, true, 620, 300};
  BarChart kl{"KL divergence from a full prefill (mean, lower is better)",
              "nats",
              methods,
              {},
              false,
              620,
              300};
  BarChart agreement{
      "Agreement with a full prefill (higher is better)", "%", methods, {}, false, 620, 300};
  for (const tools::ReuseBenchResult& r : results) {
    ttft.series.push_back({r.workload, PerMethod(r, methods, [](const tools::MethodStats& m) {
                             return m.ttft_ms_mean;
                           })});
  }
  if (!results.empty()) {
    // The split and the token kinds of the first workload (one chart each per workload below
    // would repeat the same story).
    const tools::ReuseBenchResult& r = results.front();
    split.title += ": " + r.workload;
    split.series = {
        {"matching", PerMethod(r, methods, [](const auto& m) { return m.match_ms_mean; })},
        {"KV preparation", PerMethod(r, methods, [](const auto& m) { return m.kv_prep_ms_mean; })},
        {"compute", PerMethod(r, methods, [](const auto& m) { return m.compute_ms_mean; })}};
    tokens.title += ": " + r.workload;
    tokens.series = {
        {"prefix", PerMethod(r, methods, [](const auto& m) { return double(m.tokens_prefix); })},
        {"reused", PerMethod(r, methods, [](const auto& m) { return double(m.tokens_nonprefix); })},
        {"recomputed",
         PerMethod(r, methods, [](const auto& m) { return double(m.tokens_recomputed); })},
        {"new", PerMethod(r, methods, [](const auto& m) { return double(m.tokens_new); })}};
  }
  bool has_quality = false;
  for (const tools::ReuseBenchResult& r : results) {
    if (!HasQuality(r)) continue;
    has_quality = true;
    kl.series.push_back(
        {r.workload, PerMethod(r, methods, [](const auto& m) { return m.kl_mean; })});
    agreement.series.push_back({"top-1, " + r.workload, PerMethod(r, methods, [](const auto& m) {
                                  return 100 * m.top1_agreement;
                                })});
    agreement.series.push_back(
        {"continuation, " + r.workload,
         PerMethod(r, methods, [](const auto& m) { return 100 * m.continuation_agreement; })});
  }
  page.AddChart(ttft, "Mean TTFT per method and workload; none = full prefill of every prompt.");
  page.AddChart(split,
                "Matching (finding reusable chunks), KV preparation (loading and placing their "
                "KV) and compute (prefill and selective recompute), mean per query.");
  page.AddChart(tokens,
                "prefix = reused in place; reused = reused at a new position, not recomputed; "
                "recomputed = reused, then recomputed by selection; new = computed from scratch.");
  if (has_quality) {
    page.AddChart(kl, "KL(full prefill || method) of the next-token distribution.");
    page.AddChart(agreement,
                  "top-1: same next token as a full prefill; continuation: share of a greedy "
                  "continuation that matches.");
  } else {
    page.AddParagraph("Quality was not measured (--no-quality).");
  }
  for (const tools::ReuseBenchResult& r : results) AddReuseRun(page, r);
  return page.Render();
}

std::string SpeedBenchReportHtml(const tools::SpeedBenchResult& result,
                                 const std::map<int, double>& peer_tokens_per_second,
                                 int decode_tokens, const ReportContext& context) {
  HtmlReport page("Reprise: prefill and decode speed");
  AddContext(page, context);
  page.AddParagraph("Model " + result.model + "; backend " + result.backend + ", " +
                    std::to_string(result.num_threads) + " threads.");
  const bool has_peer = !peer_tokens_per_second.empty();
  const auto peer = [&](int key) {
    auto it = peer_tokens_per_second.find(key);
    return it == peer_tokens_per_second.end() ? NAN : it->second;
  };
  std::vector<std::vector<std::string>> rows;
  if (!result.prefill_tokens_per_second.empty()) {
    BarChart prefill{"Prefill speed by prompt length", "tokens/s", {}, {}, false, 620, 300};
    BarSeries ours{"reprise", {}}, theirs{"llama.cpp", {}};
    for (const auto& [length, tps] : result.prefill_tokens_per_second) {
      const std::string test = "pp" + std::to_string(length);
      prefill.categories.push_back(test);
      ours.values.push_back(tps);
      theirs.values.push_back(peer(length));
      rows.push_back({test, Fixed(tps, 1), has_peer ? Fixed(peer(length), 1) : "",
                      has_peer && peer(length) > 0 ? Fixed(tps / peer(length), 2) + "x" : ""});
    }
    prefill.series.push_back(ours);
    if (has_peer) prefill.series.push_back(theirs);
    page.AddChart(prefill, "Tokens/s of a prompt of each length from an empty context (median).");
  }
  if (result.decode_tokens_per_second > 0) {
    const std::string test = "tg" + std::to_string(decode_tokens);
    BarChart decode{"Decode speed", "tokens/s", {test}, {}, false, 620, 300};
    decode.series.push_back({"reprise", {result.decode_tokens_per_second}});
    if (has_peer) decode.series.push_back({"llama.cpp", {peer(-1)}});
    page.AddChart(decode, "Tokens/s generating one token at a time (median).");
    rows.push_back(
        {test, Fixed(result.decode_tokens_per_second, 1), has_peer ? Fixed(peer(-1), 1) : "",
         has_peer && peer(-1) > 0 ? Fixed(result.decode_tokens_per_second / peer(-1), 2) + "x"
                                  : ""});
  }
  page.AddHeading("Figures");
  page.AddTable(
      {"test", "reprise tok/s", has_peer ? "llama.cpp tok/s" : "llama.cpp (not run)", "ratio"},
      rows);
  page.AddTable({"memory", "MiB"}, {{"model file", Fixed(result.model_file_mb, 1)},
                                    {"packed weights", Fixed(result.packed_weights_mb, 1)},
                                    {"KV cache (largest context)", Fixed(result.kv_cache_mb, 1)},
                                    {"peak resident", Fixed(result.peak_rss_mb, 1)}});
  return page.Render();
}

}  // namespace reprise::cli
