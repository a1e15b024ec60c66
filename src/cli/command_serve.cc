// `reprise serve`: an OpenAI-compatible HTTP server (server/http_server.h) over one engine with
// a pool of sessions and, with --store, a persistent KV store shared by its requests.
// SIGTERM or SIGINT drains it: no new connections, running requests finish (cancelled after
// --drain-seconds), the store is flushed, and the process exits 0.

#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/logging.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/int8_flags.h"
#include "cli/remote_flags.h"
#include "cli/option_checks.h"
#include "cli/paths.h"
#include "cli/store_names.h"
#include "reprise/engine.h"
#include "server/http_server.h"

namespace reprise::cli {
namespace {

// Each connection is a file descriptor: let the process open enough of them for
// `max_connections` and the store's files, up to the hard limit (said when that is too low).
void RaiseOpenFileLimit(int max_connections) {
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + 256;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    REPRISE_LOG(kWarning) << "open files are limited to " << limit.rlim_cur
                          << ": fewer connections than --max-connections can be taken";
  }
}

class ServeCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "serve", "Serve the model over HTTP with OpenAI's API (chat, completions, streaming)");
    sub->add_option("-m,--model", engine_.model_path, "GGUF model file")->required();
    sub->add_option("--host", server_.host,
                    "Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every "
                    "interface)")
        ->default_val("127.0.0.1");
    sub->add_option("--port", server_.port, "Port (0 = any free port, printed at start)")
        ->default_val(8080)
        ->check(IntegerIn(0, 65535));
    sub->add_option("--alias", server_.model_name,
                    "The model's id in the API (default: the file name without .gguf)");
    sub->add_option("--api-key", server_.api_keys,
                    "KEY or KEY:NAMESPACE (repeatable): requests must send one as 'Authorization: "
                    "Bearer KEY'; each key's requests reuse only its namespace's KV")
        ->take_all();
    sub->add_option("--sessions", engine_.sessions,
                    "Requests generating at once (each holds a KV cache of --context tokens)")
        ->default_val(2)
        ->check(IntegerIn(1, 256));
    sub->add_flag("!--no-batch-decode", engine_.batch_decode,
                  "Decode each session on its own instead of batching the decode steps of "
                  "concurrent sessions into one graph call");
    sub->add_option("--queue", server_.max_waiting,
                    "Requests that may wait for a session; one more is answered 429")
        ->default_val(64)
        ->check(IntegerIn(0, 4096));
    sub->add_option("--max-body-mb", max_body_mb_, "Largest request body, MiB")
        ->default_val(8)
        ->check(IntegerIn(1, 1024));
    sub->add_option("--max-tokens", server_.limits.max_tokens,
                    "Most tokens a request may ask to generate")
        ->default_val(4096)
        ->check(IntegerIn(1, 1 << 20));
    sub->add_option("--default-max-tokens", server_.limits.default_max_tokens,
                    "Tokens generated when a request names no max_tokens")
        ->default_val(256)
        ->check(IntegerIn(1, 1 << 20));
    sub->add_option("--max-prompt-tokens", server_.max_prompt_tokens,
                    "Refuse longer prompts (0 = the context size)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    sub->add_option("--drain-seconds", server_.drain_seconds,
                    "On SIGTERM, how long waiting and running requests may finish before being "
                    "cancelled")
        ->default_val(30)
        ->check(IntegerIn(0, 3600));
    sub->add_option("--max-connections", server_.max_connections,
                    "Open connections at most; one more is answered 503")
        ->default_val(server_.max_connections)
        ->check(IntegerIn(1, 1 << 20));
    sub->add_option("--max-connections-per-client", server_.max_connections_per_client,
                    "Open connections from one client address at most (behind a proxy every "
                    "client has its address: raise this to --max-connections)")
        ->default_val(server_.max_connections_per_client)
        ->check(IntegerIn(1, 1 << 20));
    sub->add_option("--request-timeout", request_timeout_seconds_,
                    "Seconds a request's head and body may take from its first byte, in all "
                    "(not per byte)")
        ->default_val(60)
        ->check(IntegerIn(1, 3600));
    sub->add_option("--idle-timeout", idle_timeout_seconds_,
                    "Seconds an open connection may wait for its next request")
        ->default_val(30)
        ->check(IntegerIn(1, 3600));
    sub->add_option("-c,--context", engine_.context_tokens,
                    "Context size of each session in tokens (0 = the model's, at most 4096)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    sub->add_option("-t,--threads", engine_.num_threads, "Threads (0 = all cores)")
        ->default_val(0)
        ->check(IntegerIn(0, kMaxThreads));
    sub->add_option("--reuse", reuse_name_, "KV reuse across requests: none, prefix, full, blend")
        ->default_val("blend")
        ->check(CLI::IsMember({"none", "prefix", "full", "blend"}));
    sub->add_option("--ratio", engine_.recompute_ratio, "Recompute ratio r for blend")
        ->default_val(0.25)
        ->check(FiniteIn(0.0001, 1.0));
    sub->add_option("--adaptive", engine_.recompute_min_deviation,
                    "Adaptive recompute for blend: of the r share, recompute only tokens whose "
                    "relative K deviation at the check layer is at least this (0 = off)")
        ->default_val(0.0)
        ->check(FiniteIn(0.0, 1.0));
    sub->add_option(
           "--adaptive-stable", engine_.stable_recompute_min_deviation,
           "Stable context for blend: when the prompt is a cached one with a block cut out "
           "(a chat whose window moved), its reused tokens far from the cut keep their "
           "KV but for a repair call that recomputes those whose relative K deviation "
           "is at least this (0 = off)")
        ->default_val(kDefaultStableRecomputeMinDeviation)
        ->check(FiniteIn(0.0, 1.0));
    sub->add_option("--guard", engine_.quality_guard,
                    "Quality guard for blend (see `reprise run --help`); 0 = off, auto = "
                    "the model's calibrated threshold")
        ->default_str("auto")
        ->transform(GuardThreshold());
    sub->add_option("--selection", selection_name_,
                    "Which reused tokens blend recomputes (see `reprise run --help`)")
        ->default_val(TokenSelectionName(engine_.token_selection))
        ->check(CLI::IsMember({"deviation", "attention", "attention-deviation"}));
    int8_.Register(*sub);
    sub->add_flag("--static-shapes", engine_.static_shapes,
                  "Every graph call computes its full capacity, padding included (see `reprise "
                  "run --help`)");
    sub->add_flag("--store", use_store_,
                  "Keep KV caches on flash across restarts, in the default store folder");
    sub->add_option("--store-dir", engine_.store_dir, "Keep KV caches in this folder")
        ->check(NonEmptyFolder());
    sub->add_option("--namespace", engine_.name_space,
                    "Namespace of requests without an API key (and of keys given without one)")
        ->default_val("default")
        ->check(NewNamespaceName());
    sub->add_option("--pool-mb", engine_.cache_mb, "Memory for cached KV, MiB")
        ->default_val(1024)
        ->check(BudgetMib());
    sub->add_option("--disk-mb", engine_.store_disk_mb, "Flash budget of the store, MiB")
        ->default_val(8192)
        ->check(BudgetMib());
    sub->add_option("--admit-after", engine_.store_admit_after,
                    "Write a chunk to flash once its text was seen in N prompts (system, document, "
                    "skill and tool segments at once); 1 = every chunk")
        ->default_val(engine_.store_admit_after)
        ->check(CLI::Range(1, 1000));
    sub->add_option("--codec", codec_name_, "Stored KV codec: f16 or int8")
        ->default_val("f16")
        ->check(CLI::IsMember({"f16", "int8"}));
    remote_.Register(*sub);
    return sub;
  }

  int Run() override {
    Result<ReuseMethod> reuse = ParseReuseMethod(reuse_name_);
    if (!reuse.ok()) return PrintError("serve", reuse.error());
    engine_.reuse = *reuse;
    Result<KvCodec> codec = ParseKvCodec(codec_name_);
    if (!codec.ok()) return PrintError("serve", codec.error());
    Result<TokenSelection> selection = ParseTokenSelection(selection_name_);
    if (!selection.ok()) return PrintError("serve", selection.error());
    engine_.token_selection = *selection;
    engine_.store_codec = *codec;
    engine_.int8_scheme = int8_.scheme();
    engine_.outlier_fraction = int8_.outlier_fraction;
    remote_.Apply(engine_);
    Result<std::string> cache_dir = FindCacheDir();
    if (use_store_ && engine_.store_dir.empty()) {
      if (!cache_dir.ok()) return PrintError("serve", cache_dir.error());
      engine_.store_dir = *cache_dir + "/store";
    }
    if (engine_.calibration_dir.empty() && cache_dir.ok()) engine_.calibration_dir = *cache_dir;
    if (server_.model_name.empty()) {
      server_.model_name = std::filesystem::path(engine_.model_path).stem().string();
    }
    for (const std::string& key : server_.api_keys) {
      const size_t colon = key.find(':');
      if (colon != std::string::npos) {
        Status valid = CheckNamespaceName(key.substr(colon + 1));
        if (!valid.ok()) return PrintError("serve", valid);
      }
    }
    server_.default_namespace = engine_.name_space;
    server_.max_body_bytes = static_cast<int64_t>(max_body_mb_) << 20;
    server_.max_running = engine_.sessions;
    server_.request_timeout = std::chrono::seconds(request_timeout_seconds_);
    server_.idle_timeout = std::chrono::seconds(idle_timeout_seconds_);
    RaiseOpenFileLimit(server_.max_connections);

    // SIGTERM and SIGINT are taken by one thread (sigwait); every other thread, the engine's
    // included, is made after this and inherits the mask. A client that goes away must not
    // kill the process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    Result<std::unique_ptr<Engine>> engine = Engine::Create(engine_);
    if (!engine.ok()) return PrintError("serve", engine.error());
    Result<std::unique_ptr<server::HttpServer>> server =
        server::HttpServer::Create(**engine, server_);
    if (!server.ok()) return PrintError("serve", server.error());
    std::fprintf(stderr, "[%s]\n", (*engine)->Describe().c_str());
    const std::string store = (*engine)->DescribeStore();
    if (!store.empty()) std::fprintf(stderr, "%s\n", store.c_str());
    std::fprintf(stderr,
                 "reprise serve: model '%s' at http://%s:%d/ (chat page at /, API at /v1, "
                 "metrics at /metrics); %d sessions, reuse %s%s\n",
                 server_.model_name.c_str(), server_.host.c_str(), (*server)->port(),
                 engine_.sessions, reuse_name_.c_str(),
                 server_.api_keys.empty() ? "" : ", API keys required");
    std::fflush(stderr);

    std::atomic<bool> served{false};
    server::HttpServer* http = server->get();
    std::thread signal_thread([&] {
      const timespec poll{0, 200 * 1000 * 1000};
      while (!served.load()) {
        const int signal = sigtimedwait(&stop_signals, nullptr, &poll);
        if (signal == SIGTERM || signal == SIGINT) {
          std::fprintf(stderr, "reprise serve: %s: draining\n",
                       signal == SIGTERM ? "SIGTERM" : "SIGINT");
          http->Stop();
          return;
        }
      }
    });
    Status serving = (*server)->Serve();
    served.store(true);
    signal_thread.join();
    server->reset();
    Status flushed = (*engine)->Flush();
    if (!serving.ok()) return PrintError("serve", serving);
    if (!flushed.ok()) return PrintError("serve", flushed.WithContext("flushing the store"));
    if (!store.empty()) std::fprintf(stderr, "%s\n", (*engine)->DescribeStore().c_str());
    std::fprintf(stderr, "reprise serve: stopped\n");
    return kExitOk;
  }

 private:
  EngineOptions engine_;
  Int8Flags int8_;
  RemoteFlags remote_;
  server::ServerOptions server_;
  std::string reuse_name_ = "blend", codec_name_ = "f16";
  std::string selection_name_;
  int max_body_mb_ = 8;
  int request_timeout_seconds_ = 60;
  int idle_timeout_seconds_ = 30;
  bool use_store_ = false;
};

}  // namespace

std::unique_ptr<Command> NewServeCommand() { return std::make_unique<ServeCommand>(); }

}  // namespace reprise::cli
