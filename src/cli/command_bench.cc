// `reprise bench prefill|decode`: tokens/s of the inference backends, optionally side by side
// with llama.cpp's llama-bench on the same file and threads (ratios from the same run).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/file_util.h"
#include "cli/bench_accuracy.h"
#include "cli/bench_concurrent.h"
#include "cli/bench_report.h"
#include "cli/bench_serve.h"
#include "cli/bench_sessions.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/html_report.h"
#include "cli/int8_flags.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "cli/out_of_order_flags.h"
#include "cli/paths.h"
#include "cli/progress_bar.h"
#include "engine/compiled_model.h"
#include "server/openai_request.h"
#include "tools/request_recall_oracle.h"
#include "tools/reuse_bench.h"
#include "tools/speed_bench.h"

namespace reprise::cli {
namespace {

// `text` as one shell word.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs llama-bench and returns {n_prompt or -1 for generation -> tokens/s}.
Result<std::map<int, double>> RunLlamaBench(const std::string& binary, const std::string& model,
                                            int threads, const std::vector<int>& lengths,
                                            int decode_tokens, int repetitions) {
  std::string p;
  for (int l : lengths) p += (p.empty() ? "" : ",") + std::to_string(l);
  const std::string command = ShellQuote(binary) + " -m " + ShellQuote(model) + " -t " +
                              std::to_string(threads) + (p.empty() ? " -p 0" : " -p " + p) +
                              " -n " + std::to_string(decode_tokens) + " -r " +
                              std::to_string(repetitions) + " -o json 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return IoError("cannot run " + binary);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) return IoError("llama-bench failed (status " + std::to_string(status) + ")");
  nlohmann::json json = nlohmann::json::parse(out, nullptr, false);
  if (!json.is_array()) return CorruptError("llama-bench printed no JSON array");
  std::map<int, double> rates;
  try {
    for (const auto& entry : json) {
      if (!entry.is_object()) return CorruptError("llama-bench printed a non-object entry");
      const int prompt = entry.value("n_prompt", 0);
      const int gen = entry.value("n_gen", 0);
      const double tps = entry.value("avg_ts", 0.0);
      rates[gen > 0 ? -1 : prompt] = tps;
    }
  } catch (const nlohmann::json::exception& e) {
    return CorruptError(std::string("llama-bench JSON: ") + e.what());
  }
  return rates;
}

class BenchCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("bench", "Measure speed: prefill, decode, reuse");
    sub->require_subcommand(1);
    RegisterReuse(*sub);
    sessions_.Register(*sub);
    accuracy_.Register(*sub);
    concurrent_.Register(*sub);
    RegisterServe(*sub);
    prefill_ = sub->add_subcommand("prefill", "Prompt-processing tokens/s per prompt length");
    decode_ = sub->add_subcommand("decode", "Generation tokens/s");
    for (CLI::App* s : {prefill_, decode_}) {
      s->add_option("-m,--model", options_.model_path, "GGUF model file")->required();
      s->add_option("-t,--threads", options_.num_threads, "Threads (0 = all cores)")
          ->default_val(0)
          ->check(IntegerIn(0, kMaxThreads));
      s->add_option("-r,--repetitions", options_.repetitions, "Runs per figure (median)")
          ->default_val(3)
          ->check(IntegerIn(1, 100));
      s->add_flag("--json", json_, "Print JSON");
      s->add_flag("--reference", options_.use_reference, "Benchmark the reference forward pass");
      s->add_option("--report", report_path_,
                    "Also write the results as a self-contained HTML page with charts");
      int8_.Register(*s);
      out_of_order_.Register(*s);
      s->add_option("--llama-bench", llama_bench_,
                    "Path of llama.cpp's llama-bench: measure it on the same file and threads "
                    "in the same run and print the ratios");
    }
    prefill_->add_option("--lengths", options_.prefill_lengths, "Prompt lengths")
        ->delimiter(',')
        ->default_str("128,512,2048")
        ->check(IntegerIn(1, 1 << 20));
    prefill_
        ->add_option("--prefill-capacity", options_.prefill_capacity,
                     "Prefill graph capacity (0 = min(length, 128))")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 16));
    prefill_->add_flag("!--no-peak", options_.measure_peak,
                       "Skip measuring the machine's peak (the matmuls' fraction of it)");
    decode_->add_option("-n,--tokens", options_.decode_tokens, "Tokens to generate")
        ->default_val(64)
        ->check(IntegerIn(1, 8192));
    return sub;
  }

  int Run() override {
    if (reuse_->parsed()) return RunReuse();
    if (sessions_.parsed()) return sessions_.Run();
    if (accuracy_.parsed()) return accuracy_.Run();
    if (concurrent_.parsed()) return concurrent_.Run();
    if (serve_->parsed()) return RunServe();
    options_.run_prefill = prefill_->parsed();
    options_.run_decode = decode_->parsed();
    const char* name = options_.run_prefill ? "bench prefill" : "bench decode";
    if (!report_path_.empty()) {
      Status can_write = CheckReportPath(report_path_);
      if (!can_write.ok()) return PrintError(name, can_write);
    }
    ProgressBar progress(ProgressBar::ForStderr(json_));
    options_.progress = progress.Callback();
    options_.int8_scheme = int8_.scheme();
    options_.outlier_fraction = int8_.outlier_fraction;
    options_.out_of_order_groups = out_of_order_.groups;
    options_.out_of_order_window = out_of_order_.window;
    {
      Result<std::string> cache_dir = FindCacheDir();  // "" = measure the ranges at load
      options_.calibration_dir = cache_dir.ok() ? *cache_dir : std::string();
    }
    Result<tools::SpeedBenchResult> result = tools::RunSpeedBench(options_);
    progress.Finish();
    if (!result.ok()) return PrintError(name, result.error());
    std::map<int, double> peer;
    if (!llama_bench_.empty()) {
      auto measured =
          RunLlamaBench(llama_bench_, options_.model_path, result->num_threads,
                        options_.run_prefill ? options_.prefill_lengths : std::vector<int>{},
                        options_.run_decode ? options_.decode_tokens : 0, options_.repetitions);
      if (!measured.ok()) return PrintError(name, measured.error());
      peer = *measured;
    }
    if (!report_path_.empty()) {
      std::string command = std::string("reprise ") + name + " -m " + options_.model_path + " -t " +
                            std::to_string(result->num_threads) + " -r " +
                            std::to_string(options_.repetitions);
      if (options_.run_prefill) {
        command += " --lengths ";
        for (size_t i = 0; i < options_.prefill_lengths.size(); ++i) {
          command += (i ? "," : "") + std::to_string(options_.prefill_lengths[i]);
        }
      }
      if (options_.run_decode) command += " -n " + std::to_string(options_.decode_tokens);
      if (!peer.empty()) command += " --llama-bench " + llama_bench_;
      const std::string html =
          SpeedBenchReportHtml(*result, peer, options_.decode_tokens,
                               CurrentReportContext(command, result->num_threads));
      Status written = WriteFileAtomically(report_path_, html);
      if (!written.ok()) return PrintError(name, written);
      if (!json_) std::fprintf(stderr, "wrote the report %s\n", report_path_.c_str());
    }
    if (json_) {
      nlohmann::json j = nlohmann::json::parse(result->ToJson(), nullptr, false);
      if (j.is_discarded()) return PrintError(name, InternalError("bench JSON does not parse"));
      if (!peer.empty()) {
        nlohmann::json p = nlohmann::json::object();
        for (const auto& [length, tps] : peer) {
          p[length < 0 ? "decode_tps" : "prefill_tps_" + std::to_string(length)] = tps;
        }
        j["llama_bench"] = p;
      }
      std::printf("%s\n", DumpJson(j).c_str());
      return kExitOk;
    }
    std::printf("%s", result->ToText().c_str());
    if (!peer.empty()) {
      std::printf("\nside by side with llama-bench (same file, %d threads, same run):\n",
                  result->num_threads);
      std::printf("%-14s %12s %12s %8s\n", "test", "reprise", "llama.cpp", "ratio");
      for (const auto& [length, tps] : result->prefill_tokens_per_second) {
        auto it = peer.find(length);
        if (it == peer.end()) continue;
        std::printf("%-14s %12.1f %12.1f %7.2fx\n", ("pp" + std::to_string(length)).c_str(), tps,
                    it->second, tps / it->second);
      }
      if (options_.run_decode && peer.count(-1)) {
        std::printf("%-14s %12.1f %12.1f %7.2fx\n",
                    ("tg" + std::to_string(options_.decode_tokens)).c_str(),
                    result->decode_tokens_per_second, peer[-1],
                    result->decode_tokens_per_second / peer[-1]);
      }
    }
    return kExitOk;
  }

 private:
  void RegisterReuse(CLI::App& bench) {
    reuse_ = bench.add_subcommand("reuse",
                                  "TTFT and quality of the KV reuse methods on a real workload");
    CLI::App* s = reuse_;
    s->add_option("-m,--model", reuse_options_.model_path, "GGUF model file")->required();
    s->add_option("--workload", reuse_options_.workload,
                  "docqa, docqa-distractor, docqa-shuffled (12 documents "
                  "recurring in new orders), chat, chat-window, skills; each with -plain (e.g. "
                  "docqa-plain: the documents pasted into one message)")
        ->default_val("docqa");
    s->add_option("--methods", method_names_, "Comma-separated: none, prefix, full, blend")
        ->delimiter(',')
        ->default_str("none,prefix,full,blend");
    s->add_option("--queries", reuse_options_.num_queries, "Queries to run")
        ->default_val(20)
        ->check(IntegerIn(1, 100000));
    s->add_option("--top-chunks", reuse_options_.top_chunks, "Retrieved chunks per query")
        ->default_val(6)
        ->check(IntegerIn(1, 1000));
    s->add_option("--chunk-tokens", reuse_options_.chunk_tokens, "Largest chunk, in tokens")
        ->default_val(512)
        ->check(IntegerIn(1, 1 << 20));
    s->add_option("--catalog-skills", reuse_options_.max_catalog_skills,
                  "skills: list at most this many skills in the shared catalogue (0 = all)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    s->add_option("--max-prompt-tokens", reuse_options_.max_prompt_tokens,
                  "Drop retrieved chunks until prompts fit (0 = the model's context)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    s->add_option("--ratio", reuse_options_.engine.recompute_ratio, "Recompute ratio r")
        ->default_val(0.25)
        ->check(FiniteIn(0.0001, 1.0));
    s->add_option("--check-layer", reuse_options_.engine.tuning.check_layer,
                  "Deviation check layer")
        ->default_val(1)
        ->check(IntegerIn(0, 4096));
    s->add_option("--force-first", reuse_options_.engine.tuning.force_first_tokens,
                  "Also recompute the first N tokens of each reused chunk")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    s->add_option("--chunking", chunking_,
                  "Where segments are cut into chunks: content (at paragraph and sentence ends "
                  "chosen by the text, so a passage is the same chunks wherever it is pasted) "
                  "or fixed (every --chunk-tokens from the segment's start)")
        ->default_val(ChunkingModeName(ReuseTuning{}.chunking))
        ->check(CLI::IsMember({"content", "fixed"}));
    s->add_option("--adaptive", reuse_options_.engine.recompute_min_deviation,
                  "Adaptive recompute: of the r share, recompute only tokens whose relative "
                  "K deviation at the check layer is at least this (0 = off)")
        ->default_val(0.0)
        ->check(FiniteIn(0.0, 1.0));
    s->add_option("--adaptive-stable", reuse_options_.engine.stable_recompute_min_deviation,
                  "Stable context: when the prompt is a cached one with a block cut out (a chat "
                  "whose window moved), its reused tokens far from the cut keep their KV but "
                  "for a repair call that recomputes those whose relative K deviation is at "
                  "least this (0 = off)")
        ->default_val(kDefaultStableRecomputeMinDeviation)
        ->check(FiniteIn(0.0, 1.0));
    s->add_option("--stable-context", reuse_options_.engine.tuning.stable_context_tokens,
                  "How far past the cut a reused token of stable context keeps its KV "
                  "(--adaptive-stable); nearer ones are selected by the r share")
        ->default_val(ReuseTuning{}.stable_context_tokens)
        ->check(IntegerIn(1, 1 << 20));
    s->add_option("--stable-repair", reuse_options_.engine.tuning.stable_repair_tokens,
                  "Of the reused tokens of stable context kept far from the cut, how many the "
                  "repair call checks per prompt (most likely to deviate first); 0 = none")
        ->default_val(ReuseTuning{}.stable_repair_tokens)
        ->check(IntegerIn(0, 1 << 20));
    s->add_option("--guard", reuse_options_.engine.quality_guard,
                  "Quality guard: prefill a recompute call in full when the reused tokens it "
                  "leaves deviate more than this (relative, at the check layer); 0 = off, "
                  "auto = the model's calibrated threshold (measured once when missing)")
        ->default_str("auto")
        ->transform(GuardThreshold());
    s->add_option("--selection", selection_,
                  "What blend's recompute ranks reused tokens by: deviation (of K at the check "
                  "layer), attention (that the prompt's last new tokens pay to them there, "
                  "measured by a probe) or attention-deviation (their product)")
        ->default_val(TokenSelectionName(EngineOptions{}.token_selection))
        ->check(CLI::IsMember({"deviation", "attention", "attention-deviation"}));
    s->add_option("--probe-tokens", reuse_options_.engine.tuning.query_probe_tokens,
                  "Query-aware selection: how many of the prompt's last new tokens the probe "
                  "runs")
        ->default_val(ReuseTuning{}.query_probe_tokens)
        ->check(IntegerIn(1, graph::kMaxProbeRows));
    s->add_flag("--deviation-v", reuse_options_.engine.tuning.deviation_includes_v,
                "Add V's deviation to K's when selecting tokens");
    s->add_flag("--refresh-check-layer", reuse_options_.engine.tuning.refresh_check_layer,
                "Keep the check layer's fresh KV for every token, not only the selected ones");
    auto* lp = s->add_option("--prefill-capacity", reuse_options_.engine.prefill_capacity,
                             "Lp (default: calibrated, else 128)")
                   ->default_val(128)
                   ->check(IntegerIn(1, 1 << 16));
    auto* ls = s->add_option("--recompute-capacity", reuse_options_.engine.recompute_capacity,
                             "Ls (default: calibrated, else 256)")
                   ->default_val(256)
                   ->check(IntegerIn(1, 1 << 16));
    lp_option_ = lp;
    ls_option_ = ls;
    s->add_option("--context", reuse_options_.engine.context_tokens, "KV context size")
        ->default_val(4096)
        ->check(IntegerIn(1, 1 << 20));
    s->add_option("-t,--threads", reuse_options_.engine.num_threads, "Threads (0 = all cores)")
        ->default_val(0)
        ->check(IntegerIn(0, kMaxThreads));
    s->add_option("--cache-mb,--pool-mb", reuse_options_.engine.cache_mb,
                  "Chunk cache budget per method, MiB (with --store: the memory pool's)")
        ->default_val(2048)
        ->check(BudgetMib());
    s->add_flag("--warm-corpus", reuse_options_.warm_corpus,
                "Pre-compute the workload's collection (a cached RAG corpus) before the queries");
    s->add_flag("--warm-retrieved-only", reuse_options_.warm_retrieved_only,
                "Pre-compute only the collection segments the queries retrieve: the hits of "
                "--warm-corpus (all but sub-chunk matches in unretrieved segments) at a fraction "
                "of its time and memory");
    s->add_option("--data", reuse_options_.data_dir, "The shared data folder (holds workloads/)");
    s->add_option("--docqa-file", reuse_options_.docqa_file,
                  "docqa workloads: a HotpotQA JSON Lines file to draw from instead of the shared "
                  "data's (e.g. the demo kit's data/demo/hotpotqa_demo_30.jsonl)");
    s->add_option("--store", reuse_options_.engine.store_dir,
                  "Use a persistent KV store in this folder (one namespace per method); a second "
                  "run finds the chunks of the first");
    s->add_option("--disk-mb", reuse_options_.engine.store_disk_mb,
                  "Flash budget of the store, MiB")
        ->default_val(8192)
        ->check(BudgetMib());
    s->add_option("--admit-after", reuse_options_.engine.store_admit_after,
                  "Write a chunk to flash once its text was seen in N prompts (system, document, "
                  "skill and tool segments at once); 1 = every chunk")
        ->default_val(reuse_options_.engine.store_admit_after)
        ->check(CLI::Range(1, 1000));
    s->add_option("--codec", store_codec_, "Stored KV codec: f16 or int8")
        ->default_val("f16")
        ->check(CLI::IsMember({"f16", "int8"}));
    s->add_option("--eviction", eviction_, "Store eviction: cost (locality x cost) or lru")
        ->default_val("cost")
        ->check(CLI::IsMember({"cost", "lru"}));
    s->add_flag("--no-prefetch", no_prefetch_, "Disable the store's idle-time prefetch");
    int8_.Register(*s);
    out_of_order_.Register(*s);
    s->add_flag("--static-shapes", reuse_options_.engine.static_shapes,
                "Every graph call computes its full capacity, padding included, as an NPU must");
    s->add_option("--scheduler", scheduler_,
                  "How blend's graph calls are chosen: dp (the chunk-merge DP), greedy (fill "
                  "each call in order) or naive (each reused or new run its own calls)")
        ->default_val("dp")
        ->check(CLI::IsMember({"dp", "greedy", "naive"}));
    s->add_flag("--no-overlap", no_overlap_,
                "Read and place the reused KV before the first graph call instead of beside the "
                "graphs (ablation)");
    s->add_flag("--no-shard-pipeline", no_shard_pipeline_,
                "Let a graph call wait for all layers of the reused KV it attends to, instead of "
                "running each shard once its layers are placed (ablation)");
    s->add_flag("--cold-flash", reuse_options_.cold_flash,
                "With --store: before every query, wait for the write-back and drop the KV "
                "files from the OS page cache, so that KV not in the memory pool is read from "
                "storage");
    s->add_flag("--no-quality", no_quality_,
                "Skip the comparison with full prefill (faster; quality columns empty)");
    s->add_option("--continuation", reuse_options_.continuation_tokens,
                  "Quality: greedy tokens generated after each prompt and compared with the full "
                  "prefill's (continuation agreement = their shared prefix / this)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    s->add_flag("--verbose", reuse_options_.verbose, "Print each query's plan and schedule");
    s->add_flag("--json", json_, "Print JSON");
    s->add_option("--report", report_path_,
                  "Also write the results as a self-contained HTML page with charts");
  }

  // The command line of a reuse run, for its report (the options that change the figures).
  std::string ReuseCommandLine() const {
    std::string methods;
    for (const std::string& m : method_names_) methods += (methods.empty() ? "" : ",") + m;
    const EngineOptions& r = reuse_options_.engine;
    std::string command = "reprise bench reuse -m " + reuse_options_.model_path + " --workload " +
                          reuse_options_.workload + " --methods " + methods + " --queries " +
                          std::to_string(reuse_options_.num_queries) + " --top-chunks " +
                          std::to_string(reuse_options_.top_chunks) + " --chunk-tokens " +
                          std::to_string(reuse_options_.chunk_tokens) + " --ratio " +
                          std::to_string(r.recompute_ratio).substr(0, 5);
    if (reuse_options_.warm_corpus) command += " --warm-corpus";
    if (reuse_options_.warm_retrieved_only) command += " --warm-retrieved-only";
    if (!reuse_options_.engine.store_dir.empty())
      command += " --store " + reuse_options_.engine.store_dir;
    if (eviction_ != "cost") command += " --eviction " + eviction_;
    if (reuse_options_.engine.tuning.chunking != ReuseTuning{}.chunking) {
      command +=
          std::string(" --chunking ") + ChunkingModeName(reuse_options_.engine.tuning.chunking);
    }
    if (no_prefetch_) command += " --no-prefetch";
    if (reuse_options_.cold_flash) command += " --cold-flash";
    if (no_overlap_) command += " --no-overlap";
    if (no_shard_pipeline_) command += " --no-shard-pipeline";
    if (reuse_options_.engine.static_shapes) command += " --static-shapes";
    if (scheduler_ != "dp") command += " --scheduler " + scheduler_;
    if (no_quality_) command += " --no-quality";
    if (reuse_options_.continuation_tokens != tools::ReuseBenchOptions{}.continuation_tokens) {
      command += " --continuation " + std::to_string(reuse_options_.continuation_tokens);
    }
    if (r.quality_guard > 0) command += " --guard " + std::to_string(r.quality_guard);
    if (reuse_options_.engine.recompute_min_deviation > 0) {
      command += " --adaptive " + std::to_string(reuse_options_.engine.recompute_min_deviation);
    }
    command += " --adaptive-stable " +
               std::to_string(reuse_options_.engine.stable_recompute_min_deviation);
    return command;
  }

  int RunReuse() {
    if (!report_path_.empty()) {
      Status can_write = CheckReportPath(report_path_);
      if (!can_write.ok()) return PrintError("bench reuse", can_write);
    }
    if (!reuse_options_.docqa_file.empty()) {
      // A path on the command line is the shell's: relative to the working folder.
      std::error_code error;
      const std::filesystem::path absolute =
          std::filesystem::absolute(reuse_options_.docqa_file, error);
      if (!error) reuse_options_.docqa_file = absolute.string();
    }
    if (reuse_options_.data_dir.empty()) {
      std::optional<std::string> found = FindSharedDataDir();
      if (!found && !reuse_options_.docqa_file.empty()) found = ".";  // the file is enough
      if (!found) {
        return PrintError(
            "bench reuse",
            NotFoundError("no shared data folder (give --data or set REPRISE_DATA_DIR)"));
      }
      reuse_options_.data_dir = *found;
    }
    EngineOptions& engine = reuse_options_.engine;
    engine.tuning.store_cost_aware_eviction = eviction_ == "cost";
    engine.tuning.chunking = *ParseChunkingMode(chunking_);     // checked above
    engine.token_selection = *ParseTokenSelection(selection_);  // checked above
    engine.tuning.store_prefetch = !no_prefetch_;
    engine.tuning.overlap_kv_preparation = !no_overlap_;
    engine.tuning.shard_pipeline = !no_shard_pipeline_;
    engine.tuning.scheduler = *ParseScheduleStrategy(scheduler_);  // checked above
    engine.store_codec = *ParseKvCodec(store_codec_);              // checked above
    if (reuse_options_.cold_flash && engine.store_dir.empty()) {
      return PrintError("bench reuse", InvalidArgumentError("--cold-flash needs --store"));
    }
    reuse_options_.measure_quality = !no_quality_;
    // Without a cache folder there are no saved calibrations: "" = do not look.
    Result<std::string> cache_dir = FindCacheDir();
    engine.calibration_dir = cache_dir.ok() ? *cache_dir : std::string();
    engine.int8_scheme = int8_.scheme();
    engine.outlier_fraction = int8_.outlier_fraction;
    engine.out_of_order_groups = out_of_order_.groups;
    engine.out_of_order_window = out_of_order_.window;
    // Capacities given on the command line are kept; otherwise calibrated or the defaults.
    if (lp_option_->count() == 0 && ls_option_->count() == 0) {
      engine.prefill_capacity = 0;
      engine.recompute_capacity = 0;
    }
    reuse_options_.methods.clear();
    for (const std::string& name : method_names_) {
      Result<ReuseMethod> method = ParseReuseMethod(name);
      if (!method.ok()) return PrintError("bench reuse", method.error());
      reuse_options_.methods.push_back(*method);
    }
    const bool verbose = reuse_options_.verbose;
    ProgressBar progress(ProgressBar::ForStderr(json_));
    reuse_options_.progress = progress.Callback();
    Result<tools::ReuseBenchResult> result =
        tools::RunReuseBench(reuse_options_, [&](const std::string& line) {
          if (verbose || line.rfind("query", 0) != 0) progress.PrintLine(line);
        });
    progress.Finish();
    if (!result.ok()) return PrintError("bench reuse", result.error());
    std::printf("%s\n", json_ ? result->ToJson().c_str() : result->ToText().c_str());
    if (!report_path_.empty()) {
      const int threads = reuse_options_.engine.num_threads > 0
                              ? reuse_options_.engine.num_threads
                              : static_cast<int>(std::thread::hardware_concurrency());
      const std::string html = ReuseBenchReportHtml(
          std::span(&*result, 1), CurrentReportContext(ReuseCommandLine(), threads));
      Status written = WriteFileAtomically(report_path_, html);
      if (!written.ok()) return PrintError("bench reuse", written);
      if (!json_) std::fprintf(stderr, "wrote the report %s\n", report_path_.c_str());
    }
    return kExitOk;
  }

  // `bench serve`: the trace replayed over HTTP (cli/bench_serve.h).
  void RegisterServe(CLI::App& bench) {
    serve_ = bench.add_subcommand(
        "serve",
        "Replay a request trace over HTTP against Reprise's or any OpenAI-compatible "
        "server: TTFT, decode tokens/s, reuse");
    CLI::App* s = serve_;
    s->add_option("--url", serve_urls_,
                  "Server URL, http://host:port; given more than once, the servers side by side "
                  "(each request to each in turn, the ratios of their TTFTs to the first's)")
        ->required();
    s->add_option("--trace", serve_options_.trace, "Request trace")
        ->required()
        ->check(CLI::IsMember({"docqa", "chat-session", "agent", "docqa-shuffled", "agent-tools"}));
    s->add_option("--requests", serve_options_.num_requests,
                  "Questions / turns / tasks / agent-tools steps (docqa's index requests come on "
                  "top)")
        ->default_val(10)
        ->check(IntegerIn(1, 1 << 20));
    s->add_option("--max-tokens", serve_options_.max_tokens, "Tokens to generate per request")
        ->default_val(32)
        ->check(IntegerIn(1, 1 << 16));
    s->add_option("--api-key", serve_options_.api_key, "Sent as Authorization: Bearer KEY");
    s->add_option("--model", serve_options_.model, "Model name (default: the server's first)");
    s->add_option("--context-tokens", serve_options_.context_tokens,
                  "Context window the prompts fit, estimated at 4 tokens per 3 words "
                  "(0 = the server's if /v1/models says, else 2048)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 24));
    s->add_option("--endpoint", serve_endpoint_,
                  "chat: /v1/chat/completions with messages; completions: /v1/completions with "
                  "the same request as one plain-text prompt")
        ->default_val("chat")
        ->check(CLI::IsMember({"chat", "completions"}));
    s->add_option("--documents", serve_documents_,
                  "Documents and skills as Reprise's fields, or inline as the system messages "
                  "the engine makes of those fields (the same prompt), or auto (field when "
                  "/v1/models says owned_by reprise); completions: always inline")
        ->default_val("auto")
        ->check(CLI::IsMember({"auto", "field", "inline"}));
    s->add_option("--catalog-skills", serve_options_.max_catalog_skills,
                  "agent: skills in the catalogue and drawn from (0 = all); agent-tools: tools "
                  "offered, at least the chosen tasks' skills (0 = just those)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    s->add_option("--clients", serve_options_.clients,
                  "Requests sent at once (the trace in waves of this many; chat-session: 1)")
        ->default_val(1)
        ->check(IntegerIn(1, 256));
    s->add_option("--data", serve_options_.data_dir, "Shared data folder (holds workloads/)");
    s->add_option("--seed", serve_options_.seed, "Seed of the requests and the agent draws")
        ->default_val(0);
    s->add_option("--tokenizer", serve_tokenizer_,
                  "The GGUF file the server runs: its tokenizer and chat template count each "
                  "prompt's tokens, for reuse recall against an oracle over earlier prompts")
        ->check(CLI::ExistingFile);
    s->add_flag("--json", serve_json_, "Print JSON");
  }

  int RunServe() {
    if (serve_options_.data_dir.empty()) {
      std::optional<std::string> found = FindSharedDataDir();
      if (!found) {
        return PrintError("bench serve", NotFoundError("no shared data folder (give --data or "
                                                       "set REPRISE_DATA_DIR)"));
      }
      serve_options_.data_dir = *found;
    }
    Result<DocumentsMode> documents = ParseDocumentsMode(serve_documents_);
    if (!documents.ok()) return PrintError("bench serve", documents.error());
    serve_options_.documents = *documents;
    Result<ServeEndpoint> endpoint = ParseServeEndpoint(serve_endpoint_);
    if (!endpoint.ok()) return PrintError("bench serve", endpoint.error());
    serve_options_.endpoint = *endpoint;
    std::unique_ptr<tools::RequestRecallOracle> recall;
    if (!serve_tokenizer_.empty()) {
      Result<std::unique_ptr<tools::RequestRecallOracle>> opened =
          tools::RequestRecallOracle::Open(serve_tokenizer_, ReuseTuning{}.min_match_tokens);
      if (!opened.ok()) return PrintError("bench serve", opened.error());
      recall = std::move(opened).value();
      serve_options_.reusable_mask = [&recall](const nlohmann::json& body,
                                               ServeEndpoint api) -> Result<std::vector<uint8_t>> {
        // The server's own parser: the prompt is built from exactly what the server reads.
        server::RequestLimits limits;
        limits.max_documents = 1 << 20;
        REPRISE_ASSIGN_OR_RETURN(server::ServeRequest request,
                                 api == ServeEndpoint::kChat
                                     ? server::ParseChatCompletionRequest(body.dump(), limits)
                                     : server::ParseCompletionRequest(body.dump(), limits));
        return recall->MaskThenAdd(request.generate);
      };
    }
    serve_options_.url = serve_urls_.front();
    Result<std::vector<ServeBenchRun>> runs = RunServeBenchSideBySide(
        serve_options_, serve_urls_, [](const RequestMeasurement& m, int index, int total) {
          std::fprintf(stderr, "\r[%d/%d] %s TTFT %.1f ms   ", index + 1, total, m.phase.c_str(),
                       m.ttft_ms);
        });
    std::fprintf(stderr, "\n");
    if (!runs.ok()) return PrintError("bench serve", runs.error());
    if (serve_json_) {
      std::printf("%s\n", DumpJson(runs->size() == 1 ? ServeBenchJson(runs->front())
                                                     : ServeComparisonJson(*runs))
                              .c_str());
      return kExitOk;
    }
    for (const ServeBenchRun& run : *runs) std::printf("%s", ServeBenchText(run).c_str());
    if (runs->size() > 1) std::printf("%s", ServeComparisonText(*runs).c_str());
    return kExitOk;
  }

  CLI::App* reuse_ = nullptr;
  BenchSessions sessions_;
  BenchAccuracy accuracy_;
  BenchConcurrent concurrent_;
  CLI::App* serve_ = nullptr;
  ServeBenchOptions serve_options_;
  std::vector<std::string> serve_urls_;
  std::string serve_documents_ = "auto";
  std::string serve_endpoint_ = "chat";
  std::string serve_tokenizer_;
  bool serve_json_ = false;
  std::string eviction_ = "cost";
  std::string store_codec_ = "f16";
  std::string chunking_;
  std::string selection_;
  std::string scheduler_;
  bool no_shard_pipeline_ = false;
  bool no_prefetch_ = false;
  bool no_overlap_ = false;
  bool no_quality_ = false;
  CLI::Option* lp_option_ = nullptr;
  CLI::Option* ls_option_ = nullptr;
  tools::ReuseBenchOptions reuse_options_;
  std::vector<std::string> method_names_ = {"none", "prefix", "full", "blend"};
  tools::SpeedBenchOptions options_;
  Int8Flags int8_;
  OutOfOrderFlags out_of_order_;
  CLI::App* prefill_ = nullptr;
  CLI::App* decode_ = nullptr;
  bool json_ = false;
  std::string llama_bench_;
  std::string report_path_;
};

}  // namespace

std::unique_ptr<Command> NewBenchCommand() { return std::make_unique<BenchCommand>(); }

}  // namespace reprise::cli
