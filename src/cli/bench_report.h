// The HTML reports of `reprise bench` (`--report FILE.html`): what the text tables say, as
// charts people can look at (cli/html_report.h).
//
// bench reuse: TTFT per method and workload, TTFT per query, the time to first token split
// into matching / KV preparation / compute, tokens by kind (prefix / reused / recomputed /
// new) and quality against a full prefill (KL, top-1 and continuation agreement).
// bench prefill|decode: tokens/s per prompt length and for decoding, with llama.cpp's bars
// beside ours when llama-bench was measured in the same run.
#pragma once

#include <map>
#include <span>
#include <string>

#include "tools/reuse_bench.h"
#include "tools/speed_bench.h"

namespace reprise::cli {

// Where and when a report was made, printed at its top.
struct ReportContext {
  std::string command;   // the command line that made it
  std::string machine;   // CPU and threads
  std::string time_utc;  // "2026-12-03 18:40 UTC"
};

// The context of this process: `command` with this machine and the current time.
ReportContext CurrentReportContext(std::string command, int num_threads);

// A page for one or more `bench reuse` runs (one per workload, same methods).
std::string ReuseBenchReportHtml(std::span<const tools::ReuseBenchResult> results,
                                 const ReportContext& context);

// A page for `bench prefill|decode`. `peer_tokens_per_second` holds llama-bench's figures by
// prompt length, -1 for decode; empty when it was not measured. `decode_tokens` names the
// decode test ("tg64").
std::string SpeedBenchReportHtml(const tools::SpeedBenchResult& result,
                                 const std::map<int, double>& peer_tokens_per_second,
                                 int decode_tokens, const ReportContext& context);

}  // namespace reprise::cli
