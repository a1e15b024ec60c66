// Admission in front of the engine's sessions: at most `max_running` requests generate at
// once; the others wait in arrival order (first come, first served), at most `max_waiting`
// of them; one more is refused at once (ResourceExhausted -> 429) instead of piling up.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "reprise/status.h"

namespace reprise::server {

class RequestQueue {
 public:
  RequestQueue(int max_running, int max_waiting);

  // Holds one running place until destroyed.
  class Admission {
   public:
    Admission() = default;
    ~Admission();
    Admission(Admission&& other) noexcept;
    Admission& operator=(Admission&& other) noexcept;
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

   private:
    friend class RequestQueue;
    explicit Admission(RequestQueue* queue) : queue_(queue) {}
    RequestQueue* queue_ = nullptr;
  };

  // Waits for a running place, in arrival order. Errors: ResourceExhausted (the queue is
  // full), Cancelled (`cancel` turned true while waiting), Unavailable (Close was called).
  Result<Admission> Admit(const std::atomic<bool>* cancel = nullptr);

  // Refuses every waiting and later request (the server is draining).
  void Close();

  int waiting() const;
  int running() const;

 private:
  void Release();

  const int max_running_;
  const int max_waiting_;
  mutable Mutex mutex_;
  CondVar changed_;
  std::deque<uint64_t> waiting_ REPRISE_GUARDED_BY(mutex_);  // tickets in arrival order
  uint64_t next_ticket_ REPRISE_GUARDED_BY(mutex_) = 0;
  int running_ REPRISE_GUARDED_BY(mutex_) = 0;
  bool closed_ REPRISE_GUARDED_BY(mutex_) = false;
};

}  // namespace reprise::server
