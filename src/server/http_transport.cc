#include "server/http_transport.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <exception>
#include <thread>

#include "base/logging.h"
#include "server/http_connection.h"

namespace reprise::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (detail::EqualsIgnoringCase(key, name)) return value;
  }
  return {};
}

int HttpRequest::CountHeader(std::string_view name) const {
  int count = 0;
  for (const auto& [key, value] : headers) count += detail::EqualsIgnoringCase(key, name) ? 1 : 0;
  return count;
}

std::string HttpRequest::HeaderList(std::string_view name) const {
  std::string list;
  for (const auto& [key, value] : headers) {
    if (!detail::EqualsIgnoringCase(key, name)) continue;
    if (!list.empty()) list += ", ";
    list += value;
  }
  return list;
}

struct HttpTransport::Impl {
  Impl(const TransportOptions& options, RequestHandler& handler)
      : limits(options.max_connections, options.max_connections_per_client),
        shared(options, handler),
        io(options.io_threads),
        acceptor(net::make_strand(io)),
        retry_timer(acceptor.get_executor()) {
    shared.io = &io;
  }

  void Accept() {
    acceptor.async_accept(net::make_strand(io),
                          [this](boost::system::error_code error, tcp::socket socket) {
                            OnAccept(error, std::move(socket));
                          });
  }

  void OnAccept(boost::system::error_code error, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // StopAccepting closed it
    if (error) {
      // Out of file descriptors or memory, or a connection reset before it was taken: say
      // so (once a second at most) and try again shortly, instead of spinning.
      const auto now = std::chrono::steady_clock::now();
      if (now - last_accept_warning > std::chrono::seconds(1)) {
        REPRISE_LOG(kWarning) << "accepting a connection failed: " << error.message();
        last_accept_warning = now;
      }
      retry_timer.expires_after(std::chrono::milliseconds(50));
      retry_timer.async_wait([this](boost::system::error_code wait_error) {
        if (!wait_error && acceptor.is_open()) Accept();
      });
      return;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // SSE events go out as they come
    const tcp::endpoint peer = socket.remote_endpoint(ignored);
    std::string client = peer.address().to_string(ignored);
    std::string refusal;
    ConnectionLimits::Ticket ticket = limits.Admit(client, &refusal);
    const bool admitted = ticket.admitted();
    auto connection = std::make_shared<detail::Connection>(std::move(socket), shared,
                                                           std::move(ticket), std::move(client));
    if (admitted) {
      connection->Start();
    } else {
      connection->StartRefused(shared.handler.TransportError(503, refusal));
    }
    Accept();
  }

  // Runs the I/O context until it has no work left; a handler that throws (bad_alloc) is
  // logged and the loop goes on.
  void RunLoop() {
    while (true) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        REPRISE_LOG(kError) << "an HTTP handler failed: " << e.what();
      } catch (...) {
        REPRISE_LOG(kError) << "an HTTP handler failed";
      }
    }
  }

  // In this order: the I/O context's destructor destroys the connections its pending
  // handlers hold, and they give their places back to `limits` and leave `shared`.
  ConnectionLimits limits;
  detail::TransportShared shared;
  net::io_context io;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  std::chrono::steady_clock::time_point last_accept_warning;
  int port = 0;
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpTransport::~HttpTransport() {
  // Whatever is left (Run never called, or returned) goes with the I/O context: its
  // destructor destroys the pending handlers, and with them the connections.
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->io.stop();
}

Result<std::unique_ptr<HttpTransport>> HttpTransport::Create(const TransportOptions& options,
                                                             RequestHandler& handler) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgumentError("port must be in [0, 65535]");
  }
  if (options.io_threads < 1 || options.max_body_bytes < 1 || options.max_header_bytes < 256 ||
      options.max_header_count < 8 || options.max_connections < 1 ||
      options.max_connections_per_client < 1 || options.request_timeout.count() < 1 ||
      options.idle_timeout.count() < 1 || options.write_timeout.count() < 1) {
    return InvalidArgumentError(
        "transport options out of range: io_threads, connection caps and timeouts must be "
        "positive, max_header_bytes >= 256, max_header_count >= 8");
  }
  auto impl = std::make_unique<Impl>(options, handler);
  boost::system::error_code error;
  tcp::resolver resolver(impl->io);
  const auto endpoints =
      resolver.resolve(options.host, std::to_string(options.port), tcp::resolver::passive, error);
  if (error || endpoints.empty()) {
    return InvalidArgumentError("cannot resolve the address '" + options.host +
                                "': " + error.message());
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  tcp::acceptor& acceptor = impl->acceptor;
  acceptor.open(endpoint.protocol(), error);
  if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  // A burst of clients must not overflow the kernel's queue of connections not yet taken.
  if (!error) acceptor.listen(1024, error);
  if (error) {
    return UnavailableError("cannot listen on " + options.host + ":" +
                            std::to_string(options.port) + ": " + error.message());
  }
  impl->port = acceptor.local_endpoint(error).port();
  impl->Accept();
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::Run() {
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->shared.options.io_threads; ++i) {
    threads.emplace_back([this] { impl_->RunLoop(); });
  }
  impl_->RunLoop();
  for (std::thread& thread : threads) thread.join();
}

void HttpTransport::StopAccepting() {
  Impl* impl = impl_.get();
  net::post(impl->acceptor.get_executor(), [impl] {
    impl->shared.draining.store(true, std::memory_order_relaxed);
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
    for (const auto& connection : impl->shared.Connections()) connection->StopIfIdle();
  });
}

void HttpTransport::CloseAll() {
  for (const auto& connection : impl_->shared.Connections()) connection->Close();
}

int HttpTransport::open_connections() const { return impl_->shared.count(); }

}  // namespace reprise::server
