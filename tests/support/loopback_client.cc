#include "support/loopback_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <utility>

namespace reprise::testing_support {

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}
namespace {

using Clock = std::chrono::steady_clock;

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace

std::optional<LoopbackClient> LoopbackClient::Connect(int port, const std::string& source_address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  LoopbackClient client(fd);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (!source_address.empty()) {
    sockaddr_in source{};
    source.sin_family = AF_INET;
    if (::inet_pton(AF_INET, source_address.c_str(), &source.sin_addr) != 1 ||
        ::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof(source)) != 0) {
      return std::nullopt;
    }
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return std::nullopt;
  }
  return client;
}

LoopbackClient::~LoopbackClient() { Close(); }

LoopbackClient::LoopbackClient(LoopbackClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}

LoopbackClient& LoopbackClient::operator=(LoopbackClient&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

bool LoopbackClient::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    if (fd_ < 0) return false;
    const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

bool LoopbackClient::Fill(Clock::time_point deadline) {
  if (fd_ < 0) return false;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd waiting{fd_, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char chunk[16384];
    const ssize_t got = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(got));
    return true;
  }
}

std::optional<RawResponse> LoopbackClient::ReadResponse(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  RawResponse response;
  while (true) {  // skips interim (1xx) responses such as 100 Continue
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    response.head = buffer_.substr(0, head_end + 4);
    buffer_.erase(0, head_end + 4);
    if (response.head.rfind("HTTP/1.", 0) != 0 || response.head.size() < 12) return std::nullopt;
    response.status = std::atoi(response.head.c_str() + 9);
    if (response.status >= 200) break;
  }
  size_t at = response.head.find("\r\n") + 2;
  while (at < response.head.size()) {
    const size_t end = response.head.find("\r\n", at);
    const std::string line = response.head.substr(at, end - at);
    at = end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    response.headers[Lower(line.substr(0, colon))] = Trim(std::string_view(line).substr(colon + 1));
  }
  auto header = [&](const std::string& name) -> const std::string* {
    auto it = response.headers.find(name);
    return it == response.headers.end() ? nullptr : &it->second;
  };
  if (const std::string* encoding = header("transfer-encoding");
      encoding != nullptr && Lower(*encoding) == "chunked") {
    response.chunked = true;
    while (true) {
      size_t line_end;
      while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
        if (!Fill(deadline)) return response;
      }
      const size_t size = std::strtoull(buffer_.substr(0, line_end).c_str(), nullptr, 16);
      if (size == 0) {
        // The last chunk, then trailers up to an empty line.
        size_t trailers_end;
        while ((trailers_end = buffer_.find("\r\n\r\n", line_end)) == std::string::npos) {
          if (!Fill(deadline)) return response;
        }
        buffer_.erase(0, trailers_end + 4);
        response.complete = true;
        return response;
      }
      while (buffer_.size() < line_end + 2 + size + 2) {
        if (!Fill(deadline)) return response;
      }
      response.body.append(buffer_, line_end + 2, size);
      buffer_.erase(0, line_end + 2 + size + 2);
    }
  }
  if (const std::string* length = header("content-length"); length != nullptr) {
    const size_t size = std::strtoull(length->c_str(), nullptr, 10);
    while (buffer_.size() < size) {
      if (!Fill(deadline)) {
        response.body = std::exchange(buffer_, std::string());
        return response;
      }
    }
    response.body = buffer_.substr(0, size);
    buffer_.erase(0, size);
    response.complete = true;
    return response;
  }
  if (response.status == 204 || response.status == 304) {
    response.complete = true;
    return response;
  }
  // Delimited by the close of the connection.
  while (Fill(deadline)) {
  }
  response.body = std::exchange(buffer_, std::string());
  pollfd closed{fd_, POLLIN, 0};
  char byte;
  response.complete = ::poll(&closed, 1, 0) == 1 && ::recv(fd_, &byte, 1, MSG_PEEK) == 0;
  return response;
}

std::string LoopbackClient::ReadBytes(size_t count, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (buffer_.size() < count && Fill(deadline)) {
  }
  std::string bytes = buffer_.substr(0, std::min(count, buffer_.size()));
  buffer_.erase(0, bytes.size());
  return bytes;
}

bool LoopbackClient::WaitForClose(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  if (fd_ < 0) return true;
  while (Clock::now() < deadline) {
    pollfd waiting{fd_, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, 100);
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t got = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (got == 0) return true;
    if (got < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset
  }
  return false;
}

void LoopbackClient::Close(bool reset) {
  if (fd_ < 0) return;
  if (reset) {
    const linger abortive{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
  }
  ::close(fd_);
  fd_ = -1;
}

std::string PostRequest(std::string_view path, std::string_view body,
                        std::string_view extra_headers) {
  std::string request = "POST " + std::string(path) +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Content-Length: " +
                        std::to_string(body.size()) + "\r\n";
  request += extra_headers;
  request += "\r\n";
  request += body;
  return request;
}

std::string GetRequest(std::string_view path, std::string_view extra_headers) {
  std::string request = "GET " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  request += extra_headers;
  request += "\r\n";
  return request;
}

}  // namespace reprise::testing_support
