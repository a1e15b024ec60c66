#include "server/http_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <utility>

namespace reprise::server::detail {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr size_t kReadPiece = 16 * 1024;
// Bytes of pipelined requests read ahead while an answer is produced. Past this the
// connection stops reading until the answer is written (a client gone is then seen at the
// next write), so that read-ahead costs a bounded amount of memory.
constexpr size_t kMaxReadAhead = 64 * 1024;
// After an answer that closes the connection, how long what the client still sends is read
// and dropped: closing a socket with unread bytes resets it, and a reset can destroy the
// answer before the client reads it.
constexpr std::chrono::seconds kLingerTime(2);

std::string_view View(beast::string_view text) { return {text.data(), text.size()}; }

std::string_view TrimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Errors that only say the client closed, reset or stalled: nothing to answer.
bool IsClientEnd(const beast::error_code& error) {
  return error == http::error::end_of_stream || error == http::error::partial_message ||
         error == net::error::eof || error == beast::error::timeout ||
         error == net::error::connection_reset || error == net::error::operation_aborted ||
         error == net::error::broken_pipe || error == net::error::bad_descriptor ||
         error == net::error::not_connected;
}

}  // namespace

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// TransportShared

void TransportShared::Add(Connection* connection, std::weak_ptr<Connection> handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  connections_[connection] = std::move(handle);
}

void TransportShared::Remove(Connection* connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(connection);
}

std::vector<std::shared_ptr<Connection>> TransportShared::Connections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Connection>> open;
  for (const auto& [raw, handle] : connections_) {
    if (std::shared_ptr<Connection> connection = handle.lock()) open.push_back(connection);
  }
  return open;
}

int TransportShared::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(connections_.size());
}

// ---------------------------------------------------------------------------------------------
// Exchange

Exchange::Exchange(std::shared_ptr<Connection> connection, Connection::Executor strand,
                   net::io_context& io)
    : strand_(std::move(strand)) {
  connection_ = std::move(connection);
  work_.emplace(io.get_executor());
}

void Exchange::Post(Connection::OutputKind kind, HttpResponse response) {
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connection = connection_;
  }
  if (!connection) return;  // answered, or the client is gone
  // The exchange rides along: the connection tells its own answer from a stale one by its
  // address, which must not be reused while this is queued.
  net::post(strand_, [connection = std::move(connection), self = shared_from_this(), kind,
                      response = std::move(response)]() mutable {
    connection->Emit(self.get(), kind, std::move(response));
  });
}

void Exchange::Send(HttpResponse response) {
  if (ended_.exchange(true)) return;
  Post(Connection::OutputKind::kWhole, std::move(response));
  ReleaseWork();
}

void Exchange::Begin(int status, std::string content_type, HttpHeaders headers) {
  if (ended_.load()) return;
  Post(Connection::OutputKind::kHead,
       HttpResponse{status, std::move(content_type), std::string(), std::move(headers)});
}

void Exchange::Write(std::string data) {
  if (ended_.load() || data.empty()) return;
  HttpResponse piece;
  piece.body = std::move(data);
  Post(Connection::OutputKind::kData, std::move(piece));
}

void Exchange::End() {
  if (ended_.exchange(true)) return;
  Post(Connection::OutputKind::kEnd, HttpResponse{});
  ReleaseWork();
}

void Exchange::OnClientGone(std::function<void()> on_gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (gone_.load(std::memory_order_acquire)) {
    if (on_gone) on_gone();
    on_gone_ = nullptr;
    return;
  }
  on_gone_ = std::move(on_gone);
}

void Exchange::NotifyGone() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (on_gone_) std::exchange(on_gone_, nullptr)();
  gone_.store(true, std::memory_order_release);
  work_.reset();
  connection_.reset();
}

void Exchange::Detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  on_gone_ = nullptr;
  work_.reset();
  connection_.reset();
}

void Exchange::ReleaseWork() {
  // The posted output keeps the I/O context busy from here on.
  std::lock_guard<std::mutex> lock(mutex_);
  work_.reset();
}

// ---------------------------------------------------------------------------------------------
// Connection: reading

Connection::Connection(tcp::socket socket, TransportShared& shared, ConnectionLimits::Ticket ticket,
                       std::string client)
    : shared_(shared),
      ticket_(std::move(ticket)),
      client_(std::move(client)),
      stream_(std::move(socket)) {}

Connection::~Connection() { shared_.Remove(this); }

void Connection::Start() {
  shared_.Add(this, weak_from_this());
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    // The first request's deadline runs from the connection's start.
    self->stream_.expires_after(self->shared_.options.request_timeout);
    self->deadline_set_ = true;
    self->ReadRequest();
  });
}

void Connection::StartRefused(HttpResponse refusal) {
  shared_.Add(this, weak_from_this());
  net::dispatch(stream_.get_executor(),
                [self = shared_from_this(), refusal = std::move(refusal)]() mutable {
                  self->phase_ = Phase::kHandling;
                  self->keep_alive_ = false;
                  self->Emit(nullptr, OutputKind::kWhole, std::move(refusal));
                });
}

void Connection::Close() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Connection::StopIfIdle() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kWaiting) self->CloseNow();
  });
}

void Connection::ReadRequest() {
  phase_ = Phase::kWaiting;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(shared_.options.max_header_bytes));
  parser_->body_limit(static_cast<std::uint64_t>(shared_.options.max_body_bytes));
  if (buffer_.size() > 0) {  // a pipelined request is here already
    ReadHead();
    return;
  }
  if (shared_.draining.load(std::memory_order_relaxed)) {
    CloseNow();
    return;
  }
  if (!deadline_set_) stream_.expires_after(shared_.options.idle_timeout);
  stream_.async_read_some(buffer_.prepare(kReadPiece),
                          [self = shared_from_this()](beast::error_code error, size_t bytes) {
                            self->OnFirstBytes(error, bytes);
                          });
}

void Connection::OnFirstBytes(beast::error_code error, size_t bytes) {
  if (error) {  // idle too long, closed, reset: nothing was asked
    CloseNow();
    return;
  }
  buffer_.commit(bytes);
  ReadHead();
}

void Connection::ReadHead() {
  phase_ = Phase::kReading;
  if (!deadline_set_) {
    stream_.expires_after(shared_.options.request_timeout);
    deadline_set_ = true;
  }
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code error, size_t) { self->OnHead(error); });
}

void Connection::OnHead(beast::error_code error) {
  if (error) {
    FailRead(error);
    return;
  }
  const auto& request = parser_->get();
  const auto count = static_cast<int>(std::distance(request.begin(), request.end()));
  if (count > shared_.options.max_header_count) {
    Refuse(431, "the request has " + std::to_string(count) + " headers, more than " +
                    std::to_string(shared_.options.max_header_count));
    return;
  }
  // Beast takes a repeated Content-Length when the values agree (RFC 9112 lets a server
  // either way); a message framed twice is refused here, as a request smuggler would send it.
  if (request.count(http::field::content_length) > 1) {
    Refuse(400, "the request has more than one Content-Length header");
    return;
  }
  if (request.count(http::field::transfer_encoding) > 1) {
    Refuse(400, "the request has more than one Transfer-Encoding header");
    return;
  }
  if (auto it = request.find(http::field::transfer_encoding); it != request.end()) {
    const std::string_view codings = TrimBlanks(View(it->value()));
    if (!parser_->chunked()) {
      Refuse(400, "Transfer-Encoding '" + std::string(codings) + "' does not end with chunked");
      return;
    }
    if (!EqualsIgnoringCase(codings, "chunked")) {
      Refuse(501, "Transfer-Encoding '" + std::string(codings) +
                      "' is not supported: send the body chunked or with a Content-Length");
      return;
    }
  }
  if (auto it = request.find(http::field::expect); it != request.end()) {
    const std::string_view expect = TrimBlanks(View(it->value()));
    if (!EqualsIgnoringCase(expect, "100-continue")) {
      Refuse(417, "Expect '" + std::string(it->value()) + "' is not supported");
      return;
    }
    if (!parser_->is_done() && request.version() >= 11) {
      // The client waits for this before it sends the body.
      auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(stream_, net::buffer(*interim),
                       [self = shared_from_this(), interim](beast::error_code write_error, size_t) {
                         if (write_error) {
                           self->CloseNow();
                           return;
                         }
                         self->ReadBody();
                       });
      return;
    }
  }
  ReadBody();
}

void Connection::ReadBody() {
  if (parser_->is_done()) {
    Dispatch();
    return;
  }
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code error, size_t) { self->OnBody(error); });
}

void Connection::OnBody(beast::error_code error) {
  if (error) {
    FailRead(error);
    return;
  }
  Dispatch();
}

void Connection::FailRead(beast::error_code error) {
  if (error == http::error::header_limit) {
    Refuse(431, "the request's head is larger than " +
                    std::to_string(shared_.options.max_header_bytes) + " bytes");
  } else if (error == http::error::body_limit) {
    Refuse(413, "the body is larger than the server's limit of " +
                    std::to_string(shared_.options.max_body_bytes) + " bytes");
  } else if (IsClientEnd(error) ||
             error.category() != http::make_error_code(http::error::end_of_stream).category()) {
    CloseNow();  // closed, reset, out of time, or a socket error: no one to answer
  } else {
    Refuse(400, "malformed request: " + error.message());
  }
}

void Connection::Refuse(int status, std::string message) {
  phase_ = Phase::kHandling;
  keep_alive_ = false;
  head_request_ = false;
  parser_.reset();
  stream_.expires_never();
  Emit(nullptr, OutputKind::kWhole, shared_.handler.TransportError(status, std::move(message)));
}

void Connection::Dispatch() {
  auto& message = parser_->get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.path = request.target.substr(0, request.target.find('?'));
  request.version = static_cast<int>(message.version());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  request.client = client_;
  keep_alive_ = message.keep_alive();
  http10_ = message.version() < 11;
  head_request_ = message.method() == http::verb::head;
  parser_.reset();
  deadline_set_ = false;
  phase_ = Phase::kHandling;
  head_written_ = false;
  chunked_ = false;
  answer_complete_ = false;
  exchange_ = std::make_shared<Exchange>(shared_from_this(), stream_.get_executor(), *shared_.io);
  StartWatch();
  shared_.handler.Handle(std::move(request), exchange_);
}

// ---------------------------------------------------------------------------------------------
// Connection: watching the client while the answer is produced

void Connection::StartWatch() {
  if (watching_ || phase_ != Phase::kHandling || buffer_.size() >= kMaxReadAhead) return;
  watching_ = true;
  // No deadline: the answer may take long. (A write started while no watch read was pending
  // set the read side's expiry too.)
  stream_.expires_never();
  stream_.async_read_some(buffer_.prepare(kReadPiece),
                          [self = shared_from_this()](beast::error_code error, size_t bytes) {
                            self->OnWatch(error, bytes);
                          });
}

void Connection::OnWatch(beast::error_code error, size_t bytes) {
  watching_ = false;
  if (phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kLingering) {
    LingerRead(/*first=*/true);  // the watch read was cancelled to linger
    return;
  }
  if (!error) {
    buffer_.commit(bytes);  // the next pipelined request, kept for later
    if (phase_ == Phase::kHandling) {
      StartWatch();
    } else if (phase_ == Phase::kNext) {
      ReadRequest();
    }
    return;
  }
  if (error == net::error::operation_aborted && phase_ == Phase::kNext) {
    ReadRequest();  // cancelled once the answer was written
    return;
  }
  ClientGone();
}

void Connection::ClientGone() {
  if (exchange_) {
    exchange_->NotifyGone();
    exchange_.reset();
  }
  CloseNow();
}

// ---------------------------------------------------------------------------------------------
// Connection: writing

std::string Connection::Head(int status, const std::string& content_type,
                             const HttpHeaders& headers, std::optional<size_t> content_length) {
  if (shared_.draining.load(std::memory_order_relaxed)) keep_alive_ = false;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " +
                     std::string(http::obsolete_reason(static_cast<http::status>(status))) + "\r\n";
  if (!content_type.empty()) head += "Content-Type: " + content_type + "\r\n";
  if (content_length) {
    head += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  } else if (chunked_) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
  if (!keep_alive_) {
    head += "Connection: close\r\n";
  } else if (http10_) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

void Connection::Emit(const Exchange* from, OutputKind kind, HttpResponse response) {
  if (phase_ != Phase::kHandling || from != exchange_.get() || answer_complete_) return;
  switch (kind) {
    case OutputKind::kWhole:
      if (head_written_) return;
      head_written_ = true;
      // The answer to HEAD is the head GET would have (RFC 9110 §9.3.2).
      Queue(Head(response.status, response.content_type, response.headers, response.body.size()) +
            (head_request_ ? std::string() : response.body));
      answer_complete_ = true;
      break;
    case OutputKind::kHead:
      if (head_written_) return;
      head_written_ = true;
      // HTTP/1.0 has no chunks: the body ends with the connection.
      chunked_ = !http10_;
      if (http10_) keep_alive_ = false;
      Queue(Head(response.status, response.content_type, response.headers, std::nullopt));
      break;
    case OutputKind::kData: {
      if (!head_written_ || response.body.empty() || head_request_) return;
      if (chunked_) {
        char size[24];
        std::snprintf(size, sizeof(size), "%zx\r\n", response.body.size());
        Queue(size + response.body + "\r\n");
      } else {
        Queue(std::move(response.body));
      }
      break;
    }
    case OutputKind::kEnd:
      if (!head_written_) return;
      if (chunked_ && !head_request_) Queue("0\r\n\r\n");
      answer_complete_ = true;
      break;
  }
  if (!writing_ && answer_complete_ && queued_.empty()) FinishAnswer();
}

void Connection::Queue(std::string bytes) {
  queued_.push_back(std::move(bytes));
  WriteQueued();
}

void Connection::WriteQueued() {
  if (writing_ || queued_.empty() || phase_ == Phase::kClosed) return;
  writing_ = true;
  writing_bytes_ = std::exchange(queued_, {});
  std::vector<net::const_buffer> buffers;
  buffers.reserve(writing_bytes_.size());
  for (const std::string& bytes : writing_bytes_) buffers.push_back(net::buffer(bytes));
  // A watch read may be pending: this sets the write's deadline only.
  stream_.expires_after(shared_.options.write_timeout);
  net::async_write(stream_, buffers, [self = shared_from_this()](beast::error_code error, size_t) {
    self->OnWritten(error);
  });
}

void Connection::OnWritten(beast::error_code error) {
  writing_ = false;
  writing_bytes_.clear();
  if (phase_ == Phase::kClosed) return;
  if (error) {  // the client is gone, or did not read for write_timeout
    ClientGone();
    return;
  }
  if (!queued_.empty()) {
    WriteQueued();
  } else if (answer_complete_) {
    FinishAnswer();
  }
}

void Connection::FinishAnswer() {
  if (exchange_) {
    exchange_->Detach();
    exchange_.reset();
  }
  if (!keep_alive_ || shared_.draining.load(std::memory_order_relaxed)) {
    Linger();
    return;
  }
  phase_ = Phase::kNext;
  if (watching_) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // OnWatch goes on to the next request
    return;
  }
  ReadRequest();
}

// ---------------------------------------------------------------------------------------------
// Connection: closing

void Connection::Linger() {
  phase_ = Phase::kLingering;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (watching_) {
    stream_.socket().cancel(ignored);  // OnWatch goes on with LingerRead
    return;
  }
  LingerRead(/*first=*/true);
}

void Connection::LingerRead(bool first) {
  if (first) stream_.expires_after(kLingerTime);
  linger_buffer_.resize(4096);
  stream_.async_read_some(
      net::buffer(linger_buffer_),
      [self = shared_from_this()](beast::error_code error, size_t) { self->OnLinger(error); });
}

void Connection::OnLinger(beast::error_code error) {
  if (error || phase_ != Phase::kLingering) {
    CloseNow();
    return;
  }
  LingerRead(/*first=*/false);
}

void Connection::CloseNow() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  if (exchange_) {
    exchange_->NotifyGone();
    exchange_.reset();
  }
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  ticket_ = ConnectionLimits::Ticket();
}

}  // namespace reprise::server::detail
