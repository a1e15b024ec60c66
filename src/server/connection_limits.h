// The server's caps on open connections: at most `max_total` in all and `max_per_client`
// from one client address, so that one client (or a crowd of slow ones) cannot take every
// connection, file descriptor and byte of memory the server has. A connection that would pass
// a cap is answered 503 and closed at once.
//
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "base/thread_annotations.h"

namespace reprise::server {

class ConnectionLimits {
 public:
  // Requires: max_total >= 1, max_per_client >= 1.
  ConnectionLimits(int max_total, int max_per_client);

  // One connection's place, held until destroyed.
  class Ticket {
   public:
    Ticket() = default;
    ~Ticket();
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    bool admitted() const { return limits_ != nullptr; }

   private:
    friend class ConnectionLimits;
    Ticket(ConnectionLimits* limits, std::string client)
        : limits_(limits), client_(std::move(client)) {}
    void Release();
    ConnectionLimits* limits_ = nullptr;
    std::string client_;
  };

  // A ticket for one more connection from `client`; when a cap is reached, an empty ticket
  // and `refusal` says which (the 503's message).
  Ticket Admit(const std::string& client, std::string* refusal);

  int open() const;
  int open_from(const std::string& client) const;

 private:
  void Release(const std::string& client);

  const int max_total_;
  const int max_per_client_;
  mutable std::mutex mutex_;
  int open_ REPRISE_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, int> per_client_ REPRISE_GUARDED_BY(mutex_);
};

}  // namespace reprise::server
