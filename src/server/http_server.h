// Reprise's OpenAI-compatible HTTP server over one Engine (cpp-httplib):
//   POST /v1/chat/completions, POST /v1/completions   streamed (SSE) or not
//   GET  /v1/models, GET /health, GET /metrics (Prometheus), GET / (the chat page)
// Requests wait for a free session in arrival order (RequestQueue); API keys map to
// namespaces; every error is answered in OpenAI's error shape (http_errors.h); a client that
// goes away cancels its generation (seen at the next write: each token of a stream, each
// second of a non-streamed reply; a request is not cancelled while its prompt is being
// prefilled).
//
// Thread-safe: httplib's worker threads call the handlers; each generation runs on a thread
// of its own that feeds the handler's writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reprise/engine.h"
#include "server/openai_request.h"

namespace reprise::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0 = any free port (see HttpServer::port)
  std::string model_name;          // the id /v1/models lists and requests may name
  std::vector<std::string> api_keys;  // KEY[:NAMESPACE]; none = no authentication
  std::string default_namespace = "default";
  int64_t max_body_bytes = 8 << 20;
  RequestLimits limits;
  int max_prompt_tokens = 0;  // 0 = the context's limit
  int max_running = 1;        // requests generating at once (the engine's sessions)
  int max_waiting = 64;       // requests waiting for a session; one more is answered 429
  // Seconds a drain (Stop) lets running requests finish before cancelling them.
  int drain_seconds = 30;
};

class HttpServer {
 public:
  // Binds the address (the port is taken when this returns). `engine` must outlive the
  // server. Errors: InvalidArgument (bad options), Unavailable (the address cannot be bound).
  static Result<std::unique_ptr<HttpServer>> Create(Engine& engine, const ServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the chosen one when options.port was 0).
  int port() const;

  // Serves until Stop; blocks. Returns once every request taken has been answered.
  Status Serve();

  // Drains: stops taking connections, lets waiting and running requests finish (cancelling
  // the ones still running after drain_seconds), and makes Serve return. Callable from any
  // thread, more than once.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reprise::server
