// WriteBack: the store's background thread (docs/design.md §6 "new chunks are written lazily").
// Request threads only queue — chunks to persist, and which chunks each prompt used — and
// this thread hands them to its sink in batches, so that nothing is written on a request's
// path. When the queues are empty and idle work was asked for (after a request), it runs the
// sink's idle work (prefetch) too: on this thread, never on the caller's.
//
// The sink (ChunkStore) does the writing; this class only orders it. Ordering guarantees:
// jobs are handed over in the order queued; the accesses queued before a batch is taken go
// with it (after its chunks are written, so that their rows exist); idle work runs only with
// both queues empty. Flush() returns once everything queued before it was handed over and
// finished, including idle work asked for before it.
//
// Thread-safe. The sink is borrowed and must outlive the WriteBack; its calls come from the
// write-back thread only, never with this class's lock held, so the sink may call Disable().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "kv/chunk.h"
#include "store/admission.h"

namespace reprise::store {

struct WriteJob {
  std::string name_space;
  std::shared_ptr<const kv::ChunkEntry> entry;
  // Fetched from the remote tier: written to flash, not sent back.
  bool from_remote = false;
};

// The chunks one prompt used, in order, and the sightings counted since the last job
// (admission control; any namespace).
struct AccessJob {
  std::string name_space;
  std::vector<kv::ChunkId> ids;
  std::vector<SightingRow> sightings;
};

class WriteBackSink {
 public:
  virtual ~WriteBackSink() = default;
  // Persists `batch` (at most the batch size; may be empty) and then records `accesses`.
  virtual void PersistBatch(std::span<const WriteJob> batch,
                            std::span<const AccessJob> accesses) = 0;
  // Idle-time work (prefetch); returns the chunks it loaded.
  virtual int PerformIdleWork() = 0;
};

class WriteBack {
 public:
  // Starts the thread. Requires: sink not null, batch_size >= 1.
  WriteBack(WriteBackSink* sink, int batch_size);
  // Finishes what is queued, then stops the thread.
  ~WriteBack();
  WriteBack(const WriteBack&) = delete;
  WriteBack& operator=(const WriteBack&) = delete;

  // Queues a chunk to persist. False (nothing queued) once Disable() was called.
  bool Enqueue(WriteJob job);
  // Queues a prompt's accesses; dropped once Disable() was called.
  void EnqueueAccess(AccessJob job);
  // Asks for one run of the sink's idle work once the queues are empty (several requests
  // before it runs make one run).
  void RequestIdleWork();
  // Persistence is off: drops the queued jobs and refuses new ones. Idle work still runs.
  void Disable();
  // Waits until nothing is queued, asked for or running (including what is queued while it
  // waits).
  void Flush();

  // Chunks loaded by idle work on this thread so far.
  int64_t num_idle_loaded() const;

 private:
  void Loop();
  bool IsIdleLocked() const REPRISE_REQUIRES(mutex_);

  WriteBackSink* const sink_;
  const int batch_size_;
  mutable Mutex mutex_;
  CondVar work_cv_;  // something to do, or stopping
  CondVar idle_cv_;  // a step finished
  std::deque<WriteJob> writes_ REPRISE_GUARDED_BY(mutex_);
  std::vector<AccessJob> accesses_ REPRISE_GUARDED_BY(mutex_);
  bool idle_work_requested_ REPRISE_GUARDED_BY(mutex_) = false;
  bool busy_ REPRISE_GUARDED_BY(mutex_) = false;  // the sink is running a step
  bool disabled_ REPRISE_GUARDED_BY(mutex_) = false;
  bool stopping_ REPRISE_GUARDED_BY(mutex_) = false;
  int64_t num_idle_loaded_ REPRISE_GUARDED_BY(mutex_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace reprise::store
