// A blocking TCP client on the loopback interface for the server's hostile-client tests: it
// sends any bytes (a head one line at a time, pipelined requests, broken framing) and reads
// back exactly what the server wrote, with a deadline on every read so that a server that
// hangs fails the test instead of hanging it.
//
// Thread-compatible: one thread per client.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace reprise::testing_support {

// A TCP port free on 127.0.0.1 now (the kernel's choice for a bound socket), for a server a
// test starts; 0 when none could be had. Another process may take it before the server binds.
int FreeLoopbackPort();

// One HTTP/1.x response as read off the wire.
struct RawResponse {
  int status = 0;
  std::string head;                            // status line and headers, as sent
  std::map<std::string, std::string> headers;  // names lower-cased; the last of repeats
  std::string body;                            // de-chunked when chunked
  bool chunked = false;
  // The body ended as its framing says (Content-Length bytes, the last chunk, or the close
  // of a response without either); false when the connection closed or the deadline passed
  // first.
  bool complete = false;
};

class LoopbackClient {
 public:
  // Connects to 127.0.0.1:`port`, from `source_address` when given (any 127.x.y.z: another
  // client as the server counts them). nullopt when the connection fails.
  static std::optional<LoopbackClient> Connect(int port, const std::string& source_address = "");
  LoopbackClient() = default;  // not connected
  ~LoopbackClient();
  LoopbackClient(LoopbackClient&& other) noexcept;
  LoopbackClient& operator=(LoopbackClient&& other) noexcept;
  LoopbackClient(const LoopbackClient&) = delete;
  LoopbackClient& operator=(const LoopbackClient&) = delete;

  // Writes all of `bytes`; false when the connection failed.
  bool Send(std::string_view bytes);

  // Reads the next response, waiting at most `timeout` in all. nullopt when no status line
  // came before the connection closed or the deadline passed.
  std::optional<RawResponse> ReadResponse(std::chrono::milliseconds timeout);

  // The next `count` bytes, raw; fewer when the connection closed or `timeout` passed first.
  std::string ReadBytes(size_t count, std::chrono::milliseconds timeout);

  // Waits at most `timeout` for the server to close the connection; true when it did (the
  // bytes it sent before are dropped).
  bool WaitForClose(std::chrono::milliseconds timeout);

  // Closes the connection (with a reset when `reset`, as a killed client would).
  void Close(bool reset = false);

  bool is_open() const { return fd_ >= 0; }

 private:
  explicit LoopbackClient(int fd) : fd_(fd) {}
  // Reads more bytes into buffer_ until `deadline`; false on close, error or the deadline.
  bool Fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;  // bytes read and not yet consumed
};

// "POST <path> HTTP/1.1" with Host, Content-Type: application/json, Content-Length and
// `extra_headers` (each "Name: value\r\n").
std::string PostRequest(std::string_view path, std::string_view body,
                        std::string_view extra_headers = "");
// "GET <path> HTTP/1.1" with Host and `extra_headers`.
std::string GetRequest(std::string_view path, std::string_view extra_headers = "");

}  // namespace reprise::testing_support
