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
#include "cli/engine_flags.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
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
      speed_engine_flags_.Register(*s, kInt8Flags | kOutOfOrderFlags);
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
    const EngineOptions& arithmetic = speed_engine_flags_.options();
    options_.int8_scheme = arithmetic.int8_scheme;
    options_.outlier_fraction = arithmetic.outlier_fraction;
    options_.out_of_order_groups = arithmetic.out_of_order_groups;
    options_.out_of_order_window = arithmetic.out_of_order_window;
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
    reuse_engine_flags_.Register(*s, kModelFlags | kBlendFlags | kInt8Flags | kStaticShapesFlag |
                                         kOutOfOrderFlags | kStoreFlags | kRemoteFlags |
                                         kExperimentalFlags);
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
    if (!r.tuning.store_cost_aware_eviction) command += " --eviction lru";
    if (reuse_options_.engine.tuning.chunking != ReuseTuning{}.chunking) {
      command +=
          std::string(" --chunking ") + ChunkingModeName(reuse_options_.engine.tuning.chunking);
    }
    if (!r.tuning.store_prefetch) command += " --no-prefetch";
    if (reuse_options_.cold_flash) command += " --cold-flash";
    if (!r.tuning.overlap_kv_preparation) command += " --no-overlap";
    if (!r.tuning.shard_pipeline) command += " --no-shard-pipeline";
    if (reuse_options_.engine.static_shapes) command += " --static-shapes";
    if (r.tuning.scheduler != ScheduleStrategy::kDp) {
      command += std::string(" --scheduler ") + ScheduleStrategyName(r.tuning.scheduler);
    }
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
    if (Status resolved = reuse_engine_flags_.Resolve(); !resolved.ok()) {
      return PrintError("bench reuse", resolved);
    }
    reuse_options_.engine = reuse_engine_flags_.options();
    reuse_options_.model_path = reuse_options_.engine.model_path;
    if (reuse_options_.cold_flash && reuse_options_.engine.store_dir.empty()) {
      return PrintError("bench reuse", InvalidArgumentError("--cold-flash needs --store"));
    }
    reuse_options_.measure_quality = !no_quality_;
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
  bool no_quality_ = false;
  // bench reuse's defaults: a 4096-token context and a larger cache (every method's chunks).
  static EngineOptions ReuseBenchDefaults() {
    EngineOptions defaults;
    defaults.context_tokens = 4096;
    defaults.cache_mb = 2048;
    return defaults;
  }
  EngineFlags reuse_engine_flags_{ReuseBenchDefaults()};
  tools::ReuseBenchOptions reuse_options_;
  std::vector<std::string> method_names_ = {"none", "prefix", "full", "blend"};
  tools::SpeedBenchOptions options_;
  EngineFlags speed_engine_flags_;  // the int8 arithmetic and out-of-order flags
  CLI::App* prefill_ = nullptr;
  CLI::App* decode_ = nullptr;
  bool json_ = false;
  std::string llama_bench_;
  std::string report_path_;
};

}  // namespace

std::unique_ptr<Command> NewBenchCommand() { return std::make_unique<BenchCommand>(); }

}  // namespace reprise::cli
