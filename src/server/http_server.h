// Reprise's OpenAI-compatible HTTP server over one Engine:
//   POST /v1/chat/completions, POST /v1/completions   streamed (SSE) or not
//   GET  /v1/models, GET /health, GET /metrics (Prometheus), GET / (the chat page)
// The connections are HttpTransport's (http_transport.h: deadlines, caps, pipelining); each
// generation is a GenerationJob on a thread of its own. Requests wait for a free session in
// arrival order (RequestQueue); API keys map to namespaces; every error is answered in
// OpenAI's error shape (http_errors.h). A client that goes away is seen at once — waiting in
// the queue, during its prompt's prefill or while it generates — and its request is
// cancelled. /health, /metrics, /v1/models and the page are answered on the I/O threads,
// whatever the generations do.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
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
  int64_t max_body_bytes = 8 << 20;  // on the wire, and inflated (Content-Encoding)
  RequestLimits limits;
  int max_prompt_tokens = 0;  // 0 = the context's limit
  int max_running = 1;        // requests generating at once (the engine's sessions)
  int max_waiting = 64;       // requests waiting for a session; one more is answered 429
  // Seconds a drain (Stop) lets waiting and running requests finish before cancelling them.
  int drain_seconds = 30;
  // Connections (HttpTransport): caps, in all and from one client address (one more is
  // answered 503); a request's head and body must arrive within request_timeout of its first
  // byte; an open connection waits idle_timeout for its next request; a write to a client
  // that does not read fails after write_timeout.
  int max_connections = 512;
  int max_connections_per_client = 128;
  int max_header_bytes = 16 * 1024;
  int max_header_count = 100;
  std::chrono::milliseconds request_timeout{60000};
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  int io_threads = 2;
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

  // Serves until Stop; blocks. Returns once every request taken has been answered and every
  // connection closed.
  Status Serve();

  // Drains: stops taking connections, closes idle ones, answers new requests on open ones
  // 503, lets waiting and running requests finish; after drain_seconds, cancels what is left
  // (503 before an answer's head, an SSE error event and [DONE] after it), and makes Serve
  // return. Callable from any thread, more than once.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reprise::server
