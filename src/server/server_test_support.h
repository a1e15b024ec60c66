// What the server's test binaries share (not part of the library): a server over its own
// engine on a free loopback port, run on a thread; the events of an SSE body; compression.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "reprise/engine.h"
#include "server/http_server.h"

namespace reprise::server::test_support {

// Whether this build runs under AddressSanitizer (memory figures mean little there).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// An engine (blend reuse, 64 MiB of cache, 2 threads) and an HttpServer over it, serving on a
// thread of its own. Thread-compatible.
class RunningServer {
 public:
  // Serves `model` on a free port with `sessions` sessions; `options`' port and max_running
  // are set here, and its model_name when empty ("test-model"). Check ok() after.
  RunningServer(const std::string& model, int sessions, int context_tokens, ServerOptions options);
  // Stop, as below.
  ~RunningServer();
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;

  bool ok() const { return server_ != nullptr; }
  const std::string& error() const { return error_; }
  int port() const { return server_->port(); }
  HttpServer& server() { return *server_; }
  // What Serve returned; valid after Stop.
  const Status& served() const { return served_; }

  // Drains the server as SIGTERM does and waits for Serve to return.
  void Stop();

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
  Status served_;
  std::string error_;
};

// The JSON payloads of an SSE body, without [DONE]; `done` tells whether it ended with it.
// A payload that is not JSON is a discarded value.
std::vector<nlohmann::json> SseEvents(const std::string& body, bool* done);

// `text` deflated by zlib with `window_bits` (15 + 16: gzip; 15: zlib, HTTP's deflate; -15:
// raw deflate).
std::string Compress(const std::string& text, int window_bits);

}  // namespace reprise::server::test_support
