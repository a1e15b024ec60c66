#include "server/connection_limits.h"

#include <utility>

#include "base/check.h"

namespace reprise::server {

ConnectionLimits::ConnectionLimits(int max_total, int max_per_client)
    : max_total_(max_total), max_per_client_(max_per_client) {
  REPRISE_CHECK(max_total >= 1 && max_per_client >= 1);
}

ConnectionLimits::Ticket::~Ticket() { Release(); }

ConnectionLimits::Ticket::Ticket(Ticket&& other) noexcept
    : limits_(std::exchange(other.limits_, nullptr)), client_(std::move(other.client_)) {}

ConnectionLimits::Ticket& ConnectionLimits::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    limits_ = std::exchange(other.limits_, nullptr);
    client_ = std::move(other.client_);
  }
  return *this;
}

void ConnectionLimits::Ticket::Release() {
  if (limits_ != nullptr) std::exchange(limits_, nullptr)->Release(client_);
}

ConnectionLimits::Ticket ConnectionLimits::Admit(const std::string& client, std::string* refusal) {
  std::lock_guard<std::mutex> lock(mutex_);
  refusal->clear();
  if (open_ >= max_total_) {
    *refusal = "the server has " + std::to_string(open_) +
               " connections open, its limit (--max-connections); try again later";
    return Ticket();
  }
  int& mine = per_client_[client];
  if (mine >= max_per_client_) {
    *refusal = "this client has " + std::to_string(mine) +
               " connections open, the limit per client (--max-connections-per-client)";
    return Ticket();
  }
  ++mine;
  ++open_;
  return Ticket(this, client);
}

void ConnectionLimits::Release(const std::string& client) {
  std::lock_guard<std::mutex> lock(mutex_);
  --open_;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

int ConnectionLimits::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

int ConnectionLimits::open_from(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace reprise::server
