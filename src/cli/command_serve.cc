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
#include "cli/engine_flags.h"
#include "cli/option_checks.h"
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
    engine_flags_.Register(*sub, kRequestEngineFlags | kSessionFlags);
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
    return sub;
  }

  int Run() override {
    if (Status resolved = engine_flags_.Resolve(); !resolved.ok()) {
      return PrintError("serve", resolved);
    }
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
                 engine_.sessions, ReuseMethodName(engine_.reuse),
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
  // A server's defaults: blend (its requests share documents and skills in any order) and
  // two sessions; every other default is EngineOptions'.
  static EngineOptions ServeDefaults() {
    EngineOptions defaults;
    defaults.reuse = ReuseMethod::kBlend;
    defaults.sessions = 2;
    return defaults;
  }

  EngineFlags engine_flags_{ServeDefaults()};
  EngineOptions& engine_ = engine_flags_.options();
  server::ServerOptions server_;
  int max_body_mb_ = 8;
  int request_timeout_seconds_ = 60;
  int idle_timeout_seconds_ = 30;
};

}  // namespace

std::unique_ptr<Command> NewServeCommand() { return std::make_unique<ServeCommand>(); }

}  // namespace reprise::cli
