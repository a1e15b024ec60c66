// The HTTP/1.1 layer of `reprise serve`, on Boost.Beast and Asio: it accepts connections,
// reads requests, hands each to a RequestHandler and writes the answers back, whole or
// streamed. What it holds to, whatever clients send or fail to send:
//   - a request's head and body must arrive within `request_timeout` of its first byte (one
//     deadline for the whole request, not a timeout that each byte restarts); a connection
//     waits `idle_timeout` for its next request;
//   - heads are capped in bytes and in header count (431), bodies in bytes (413); framing that
//     cannot be read safely (a bad or repeated Content-Length, Content-Length beside
//     Transfer-Encoding, a bad chunk) is answered 400 and the connection closed;
//   - at most `max_connections` connections, `max_connections_per_client` from one address
//     (ConnectionLimits; one more is answered 503 and closed);
//   - requests pipelined on a connection are answered one at a time, in order;
//   - while a request is handled its socket is still read, so a client that goes away (or
//     resets) is seen at once — ResponseStream::OnClientGone — not at the next write;
//   - a few I/O threads serve every connection (a slow client costs a few KiB, not a thread);
//     handlers run on them and must not block: long work runs on a thread of its own and
//     answers through its ResponseStream, which any thread may use.
//
// Thread-safe where stated.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reprise/status.h"

namespace reprise::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string target;   // as sent: the path and the query
  std::string path;     // the target up to '?'
  int version = 11;     // 10: HTTP/1.0, 11: HTTP/1.1
  HttpHeaders headers;  // in the order sent, names as sent
  std::string body;     // chunked bodies de-chunked; a Content-Encoding is still on it
  std::string client;   // the client's address

  // The value of the first header named `name` (case-insensitive); "" when there is none.
  std::string_view Header(std::string_view name) const;
  // How many headers are named `name`.
  int CountHeader(std::string_view name) const;
  // The values of every header named `name`, joined with ", ": repeated headers are one list
  // (RFC 9110 §5.3).
  std::string HeaderList(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HttpHeaders headers;  // more headers (the transport writes the framing ones)
};

// One request's answer. The handler (or the thread it hands the work to) gives either Send,
// or Begin, Write..., End; calls after the answer ended are ignored, as are all calls once
// the client has gone. Thread-safe; nothing blocks (the bytes are queued on the connection).
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // The whole answer, with its Content-Length.
  virtual void Send(HttpResponse response) = 0;
  // The head of a streamed answer (chunked; close-delimited for an HTTP/1.0 client); the
  // body is then what Write gives, until End.
  virtual void Begin(int status, std::string content_type, HttpHeaders headers) = 0;
  virtual void Write(std::string data) = 0;
  virtual void End() = 0;
  // Whether the client has gone away (closed, reset or failed a write) before the answer
  // ended.
  virtual bool client_gone() const = 0;
  // Calls `on_gone` once, on an I/O thread (or at once, here, when the client has already
  // gone), if the client goes away before the answer ends. It runs under the stream's lock:
  // it must only set flags. An empty function removes the one set before.
  virtual void OnClientGone(std::function<void()> on_gone) = 0;
};

// The application on top of the transport.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // One request, on an I/O thread; the connection reads no other request until `response`
  // has ended. Must not block.
  virtual void Handle(HttpRequest request, std::shared_ptr<ResponseStream> response) = 0;
  // The answer to a request the transport refuses itself (400 bad framing, 413, 431, 417,
  // 501, 503 over a connection cap), with `message` saying why. Called on an I/O thread.
  virtual HttpResponse TransportError(int status, std::string message) = 0;
};

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port (HttpTransport::port says which)
  int io_threads = 2;
  int64_t max_body_bytes = 8 << 20;  // on the wire, after de-chunking
  int max_header_bytes = 16 * 1024;  // the request line and every header
  int max_header_count = 100;
  int max_connections = 512;
  int max_connections_per_client = 128;
  std::chrono::milliseconds request_timeout{60000};  // a request's first byte to its last
  std::chrono::milliseconds idle_timeout{30000};     // the wait for a next request
  std::chrono::milliseconds write_timeout{30000};    // one write to the client
};

// Thread-safe.
class HttpTransport {
 public:
  // Binds and listens (the port is taken when this returns). `handler` must outlive the
  // transport. Errors: InvalidArgument (bad options, an address that does not resolve),
  // Unavailable (the address cannot be bound).
  static Result<std::unique_ptr<HttpTransport>> Create(const TransportOptions& options,
                                                       RequestHandler& handler);
  // Closes every connection; handlers' ResponseStreams outliving it must not be used.
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  int port() const;

  // Serves on options.io_threads threads, this one among them, until StopAccepting was
  // called and every connection has closed.
  void Run();

  // Takes no more connections; closes the connections that wait for a request. One with a
  // request in hand closes once it is answered (its answer says "Connection: close").
  void StopAccepting();

  // Closes every connection now, answered or not.
  void CloseAll();

  int open_connections() const;

 private:
  struct Impl;
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reprise::server
