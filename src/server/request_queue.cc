#include "server/request_queue.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace reprise::server {

RequestQueue::RequestQueue(int max_running, int max_waiting)
    : max_running_(std::max(1, max_running)), max_waiting_(std::max(0, max_waiting)) {}

RequestQueue::Admission::~Admission() {
  if (queue_) queue_->Release();
}

RequestQueue::Admission::Admission(Admission&& other) noexcept
    : queue_(std::exchange(other.queue_, nullptr)) {}

RequestQueue::Admission& RequestQueue::Admission::operator=(Admission&& other) noexcept {
  if (this != &other) {
    if (queue_) queue_->Release();
    queue_ = std::exchange(other.queue_, nullptr);
  }
  return *this;
}

Result<RequestQueue::Admission> RequestQueue::Admit(const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return UnavailableError("the server is shutting down");
  if (waiting_.empty() && running_ < max_running_) {
    ++running_;
    return Admission(this);
  }
  if (static_cast<int>(waiting_.size()) >= max_waiting_) {
    return ResourceExhaustedError("the server is busy: " + std::to_string(running_) +
                                  " requests running and " + std::to_string(waiting_.size()) +
                                  " waiting; try again later");
  }
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(ticket);
  auto leave = [&] {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
    changed_.notify_all();  // the one behind may be first now
  };
  while (true) {
    if (closed_) {
      leave();
      return UnavailableError("the server is shutting down");
    }
    if (cancel != nullptr && cancel->load()) {
      leave();
      return CancelledError("the request was cancelled while waiting");
    }
    if (waiting_.front() == ticket && running_ < max_running_) break;
    // Polled so that a cancel flag set without a notification is seen.
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  waiting_.pop_front();
  ++running_;
  changed_.notify_all();
  return Admission(this);
}

void RequestQueue::Release() {
  std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  changed_.notify_all();
}

void RequestQueue::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

int RequestQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(waiting_.size());
}

int RequestQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

}  // namespace reprise::server
