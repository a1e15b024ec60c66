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
  MutexLock lock(mutex_);
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
    mutex_.AssertHeld();  // called under the lock above
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
    changed_.NotifyAll();  // the one behind may be first now
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
    changed_.WaitFor(lock, std::chrono::milliseconds(50));
  }
  waiting_.pop_front();
  ++running_;
  changed_.NotifyAll();
  return Admission(this);
}

void RequestQueue::Release() {
  MutexLock lock(mutex_);
  --running_;
  changed_.NotifyAll();
}

void RequestQueue::Close() {
  MutexLock lock(mutex_);
  closed_ = true;
  changed_.NotifyAll();
}

int RequestQueue::waiting() const {
  MutexLock lock(mutex_);
  return static_cast<int>(waiting_.size());
}

int RequestQueue::running() const {
  MutexLock lock(mutex_);
  return running_;
}

}  // namespace reprise::server
