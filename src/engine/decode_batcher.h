// DecodeBatcher: runs the decode steps of concurrent sessions as one graph call.
//
// A decode step of one sequence streams every weight of the model for one token; with N
// sessions decoding at once, N such steps read the weights N times. The batcher gathers the
// sessions' next tokens and runs them through one decode-batch graph call (each row attends to
// its own session's KV cache), so the weights are read once per step for all of them.
//
// Sessions in their token loop join as participants (Participant). A session's Step waits for
// the other participants' steps to arrive — at most `max_wait`, or half the last batch's time
// when that is longer — then one of the waiting threads (the leader) runs the batch for all of
// them; a session that is slow to come back (its client reads slowly) costs the others at most
// that wait per step. Thread-safe; the CompiledModel must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "engine/compiled_model.h"
#include "graph/execution_context.h"
#include "graph/executor.h"

namespace reprise::engine {

struct DecodeBatcherStats {
  int64_t steps = 0;  // graph calls run
  int64_t rows = 0;   // session steps they ran (rows / steps = mean batch size)
  int64_t max_rows = 0;
};

class DecodeBatcher {
 public:
  static constexpr int kMaxBatch = 64;

  // Up to `max_batch` sessions per call (the decode-batch graph's capacity). Errors:
  // InvalidArgument (max_batch outside [1, kMaxBatch]), those of compiling the graph.
  static Result<std::unique_ptr<DecodeBatcher>> Create(
      std::shared_ptr<const CompiledModel> compiled, int max_batch,
      std::chrono::microseconds max_wait = std::chrono::microseconds(500));

  // Marks a session as decoding for its lifetime: the batcher waits for its steps.
  class Participant {
   public:
    explicit Participant(DecodeBatcher* batcher);  // null = nothing
    ~Participant();
    Participant(const Participant&) = delete;
    Participant& operator=(const Participant&) = delete;

   private:
    DecodeBatcher* batcher_;
  };

  // Runs one decode step of a session: `row` (its token, position, slot and KV cache) in the
  // next batch; its logits ([vocab]) are copied to `logits`. Blocks until that batch ran.
  // Errors: InvalidArgument (a row the graph refuses).
  Status Step(const graph::BatchRow& row, std::span<float> logits);

  int max_batch() const { return max_batch_; }
  DecodeBatcherStats stats() const;

 private:
  struct Request {
    graph::BatchRow row;
    std::span<float> logits;
    std::chrono::steady_clock::time_point arrival;
    bool done = false;  // guarded by mutex_
    Status status;
  };
  DecodeBatcher() = default;
  // Runs `batch` and copies each row's logits out (by the leader, the lock not held).
  Status RunBatch(std::span<Request* const> batch);
  void Join();
  void Leave();

  std::shared_ptr<const CompiledModel> compiled_;
  std::shared_ptr<const graph::CompiledGraph> graph_;
  std::unique_ptr<graph::ExecutionContext> context_;  // used by the leader only
  std::unique_ptr<graph::Executor> executor_;
  int max_batch_ = 1;
  std::chrono::microseconds max_wait_{0};

  mutable Mutex mutex_;
  CondVar changed_;
  std::deque<Request*> pending_ REPRISE_GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point oldest_pending_ REPRISE_GUARDED_BY(mutex_);
  int participants_ REPRISE_GUARDED_BY(mutex_) = 0;
  bool running_ REPRISE_GUARDED_BY(mutex_) = false;
  std::chrono::steady_clock::duration last_run_ REPRISE_GUARDED_BY(mutex_){0};
  DecodeBatcherStats stats_ REPRISE_GUARDED_BY(mutex_);
  std::vector<graph::BatchRow> rows_scratch_;  // leader only
};

}  // namespace reprise::engine
