// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with Clang's
// thread-safety annotations, so that members marked REPRISE_GUARDED_BY(mutex_) are checked
// at compile time (docs/style.md §6). libstdc++'s std::mutex carries no annotations, so a
// GUARDED_BY naming one is ignored; every mutex of the library is a base::Mutex instead.
// `tools/check_thread_safety.py` compiles the files that use them with Clang's
// -Wthread-safety as errors.
//
// Waiting: write the condition as a loop in the function that holds the lock, where the
// analysis sees it (`while (!ready_) cv_.Wait(lock);`), rather than as a predicate lambda,
// whose body the analysis checks as a function of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace reprise {

// A non-recursive mutex. Thread-safe.
class REPRISE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() REPRISE_ACQUIRE() { mutex_.lock(); }
  void Unlock() REPRISE_RELEASE() { mutex_.unlock(); }
  // Tells the analysis that the caller holds the mutex (it is not checked at run time).
  void AssertHeld() const REPRISE_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

// Holds `mutex` from construction to destruction (or between Unlock and Lock). Confined to
// one thread.
class REPRISE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) REPRISE_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() REPRISE_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Requires: held (Unlock), not held (Lock).
  void Unlock() REPRISE_RELEASE() { lock_.unlock(); }
  void Lock() REPRISE_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// A condition variable waited on under a MutexLock. Thread-safe.
class CondVar {
 public:
  // Requires: `lock` held; it is released while waiting and held again on return, which may
  // be spurious (wait in a loop over the condition).
  void Wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  // As Wait; false when `timeout` passed.
  template <typename Rep, typename Period>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout) {
    return cv_.wait_for(lock.lock_, timeout) == std::cv_status::no_timeout;
  }
  // As Wait; false when `deadline` passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Duration> deadline) {
    return cv_.wait_until(lock.lock_, deadline) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace reprise
