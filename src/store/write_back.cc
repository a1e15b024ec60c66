#include "store/write_back.h"

#include <iterator>

#include "base/check.h"

namespace reprise::store {

WriteBack::WriteBack(WriteBackSink* sink, int batch_size) : sink_(sink), batch_size_(batch_size) {
  REPRISE_CHECK(sink_ != nullptr && batch_size_ >= 1);
  thread_ = std::thread([this] { Loop(); });
}

WriteBack::~WriteBack() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  work_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

bool WriteBack::Enqueue(WriteJob job) {
  {
    MutexLock lock(mutex_);
    if (disabled_) return false;
    writes_.push_back(std::move(job));
  }
  work_cv_.NotifyOne();
  return true;
}

void WriteBack::EnqueueAccess(AccessJob job) {
  {
    MutexLock lock(mutex_);
    if (disabled_) return;
    accesses_.push_back(std::move(job));
  }
  work_cv_.NotifyOne();
}

void WriteBack::RequestIdleWork() {
  {
    MutexLock lock(mutex_);
    idle_work_requested_ = true;
  }
  work_cv_.NotifyOne();
}

void WriteBack::Disable() {
  {
    MutexLock lock(mutex_);
    disabled_ = true;
    writes_.clear();
    accesses_.clear();
  }
  idle_cv_.NotifyAll();
}

bool WriteBack::IsIdleLocked() const {
  return writes_.empty() && accesses_.empty() && !idle_work_requested_ && !busy_;
}

void WriteBack::Flush() {
  MutexLock lock(mutex_);
  while (!IsIdleLocked()) idle_cv_.Wait(lock);
}

int64_t WriteBack::num_idle_loaded() const {
  MutexLock lock(mutex_);
  return num_idle_loaded_;
}

void WriteBack::Loop() {
  MutexLock lock(mutex_);
  while (true) {
    while (!stopping_ && writes_.empty() && accesses_.empty() && !idle_work_requested_) {
      work_cv_.Wait(lock);
    }
    if (!writes_.empty() || !accesses_.empty()) {
      std::vector<WriteJob> batch;
      while (!writes_.empty() && static_cast<int>(batch.size()) < batch_size_) {
        batch.push_back(std::move(writes_.front()));
        writes_.pop_front();
      }
      std::vector<AccessJob> accesses = std::move(accesses_);
      accesses_.clear();
      busy_ = true;
      lock.Unlock();
      sink_->PersistBatch(batch, accesses);
      lock.Lock();
      busy_ = false;
    } else if (stopping_) {
      // Idle work asked for is skipped: it only warms a pool that is going away.
      idle_work_requested_ = false;
      idle_cv_.NotifyAll();
      return;
    } else if (idle_work_requested_) {
      idle_work_requested_ = false;
      busy_ = true;
      lock.Unlock();
      const int loaded = sink_->PerformIdleWork();
      lock.Lock();
      busy_ = false;
      num_idle_loaded_ += loaded;
    }
    idle_cv_.NotifyAll();
  }
}

}  // namespace reprise::store
