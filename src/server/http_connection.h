// One HTTP/1.1 connection of HttpTransport (http_transport.h), Boost.Beast on an Asio strand:
// it reads a request under its deadline and caps, hands it to the RequestHandler, watches the
// socket while the answer is produced (a read that fails is the client gone; bytes that
// arrive are the next pipelined request, kept), writes the answer, and reads the next request
// or closes. Internal to the transport.
//
// Thread-safe: its own work runs on its strand; Close and StopIfIdle post there.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/thread_annotations.h"
#include "server/connection_limits.h"
#include "server/http_transport.h"

namespace reprise::server::detail {

// ASCII letters compared without regard to case (header names, tokens).
bool EqualsIgnoringCase(std::string_view a, std::string_view b);

class Connection;

// What the connections of one transport share.
struct TransportShared {
  TransportShared(const TransportOptions& options_in, RequestHandler& handler_in)
      : options(options_in), handler(handler_in) {}

  const TransportOptions options;
  RequestHandler& handler;
  boost::asio::io_context* io = nullptr;  // set by the transport, which owns it
  // Set once by StopAccepting; read by every connection between requests (relaxed: a
  // connection that reads it late answers one more request, which the handler refuses).
  std::atomic<bool> draining{false};

  // Every open connection, for StopAccepting and CloseAll.
  void Add(Connection* connection, std::weak_ptr<Connection> handle);
  void Remove(Connection* connection);
  std::vector<std::shared_ptr<Connection>> Connections() const;
  int count() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_
      REPRISE_GUARDED_BY(mutex_);
};

class Exchange;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The connection's strand.
  using Executor = boost::beast::tcp_stream::executor_type;

  // `socket` runs on a strand of its own. `ticket` is its place under the connection caps.
  Connection(boost::asio::ip::tcp::socket socket, TransportShared& shared,
             ConnectionLimits::Ticket ticket, std::string client);
  ~Connection();

  // Reads requests until the client or the server closes.
  void Start();
  // Answers `refusal` (a cap was reached) and closes.
  void StartRefused(HttpResponse refusal);
  // Closes at once.
  void Close();
  // Closes if no request is being read or answered (the server is draining).
  void StopIfIdle();

  // What an Exchange hands over, on the strand.
  enum class OutputKind { kWhole, kHead, kData, kEnd };
  void Emit(const Exchange* from, OutputKind kind, HttpResponse response);

 private:
  enum class Phase {
    kWaiting,    // for the first byte of a request
    kReading,    // a request's head and body
    kHandling,   // the handler has the request; its answer is being written
    kNext,       // answered; about to read the next request
    kLingering,  // answered with "Connection: close": reading what the client still sends
    kClosed,
  };

  void ReadRequest();
  void OnFirstBytes(boost::beast::error_code error, size_t bytes);
  void ReadHead();
  void OnHead(boost::beast::error_code error);
  void ReadBody();
  void OnBody(boost::beast::error_code error);
  // Answers `status` itself and closes.
  void Refuse(int status, std::string message);
  void FailRead(boost::beast::error_code error);
  void Dispatch();

  // Reads while the answer is produced: the client gone, or the next request's bytes.
  void StartWatch();
  void OnWatch(boost::beast::error_code error, size_t bytes);
  void ClientGone();

  void Queue(std::string bytes);
  void WriteQueued();
  void OnWritten(boost::beast::error_code error);
  void FinishAnswer();
  std::string Head(int status, const std::string& content_type, const HttpHeaders& headers,
                   std::optional<size_t> content_length);

  void Linger();
  void LingerRead(bool first);
  void OnLinger(boost::beast::error_code error);
  void CloseNow();

  TransportShared& shared_;
  ConnectionLimits::Ticket ticket_;
  const std::string client_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;  // bytes read and not yet parsed (pipelined requests)
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Phase phase_ = Phase::kWaiting;
  bool deadline_set_ = false;  // the current request's deadline is running
  bool watching_ = false;      // a watch read is pending
  bool keep_alive_ = true;     // of the current request
  bool http10_ = false;
  bool head_request_ = false;  // HEAD: the answer has a head only
  bool head_written_ = false;  // of the current answer
  bool chunked_ = false;       // the current answer is chunked
  bool answer_complete_ = false;
  bool writing_ = false;
  std::vector<std::string> queued_;  // to write after the current write
  std::vector<std::string> writing_bytes_;
  std::shared_ptr<Exchange> exchange_;
  std::vector<char> linger_buffer_;
};

// The ResponseStream of one request: posts what the handler gives onto the connection's
// strand. Until the answer has been written (Detach) or the client is gone (NotifyGone) it
// keeps the connection alive — no read or write of the connection may be pending while a
// handler works — and the I/O context running.
class Exchange final : public ResponseStream, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Connection> connection, Connection::Executor strand,
           boost::asio::io_context& io);

  void Send(HttpResponse response) override;
  void Begin(int status, std::string content_type, HttpHeaders headers) override;
  void Write(std::string data) override;
  void End() override;
  bool client_gone() const override { return gone_.load(std::memory_order_acquire); }
  void OnClientGone(std::function<void()> on_gone) override;

  // On the strand: the client went away.
  void NotifyGone();
  // On the strand: the answer was written (or cannot be); let go of everything.
  void Detach();

 private:
  void Post(Connection::OutputKind kind, HttpResponse response);
  void ReleaseWork();

  Connection::Executor strand_;
  // Release-acquire: whoever sees it true sees the callback already run.
  std::atomic<bool> gone_{false};
  std::atomic<bool> ended_{false};  // Send or End was called: later calls are dropped
  std::mutex mutex_;
  std::function<void()> on_gone_ REPRISE_GUARDED_BY(mutex_);
  // Reset by Detach and NotifyGone, which breaks the cycle with Connection::exchange_.
  std::shared_ptr<Connection> connection_ REPRISE_GUARDED_BY(mutex_);
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_
      REPRISE_GUARDED_BY(mutex_);
};

}  // namespace reprise::server::detail
