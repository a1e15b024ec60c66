// One request's generation, run on a thread of its own so that the HTTP handler can wait for
// the first token (and answer an error with a proper status), then stream the rest as it
// comes. Stop sequences are applied here: the text handed out never holds one, and
// generation stops at the first.
//
// Thread-safe: the generation thread produces, one handler thread consumes; Cancel may be
// called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "reprise/engine.h"
#include "server/request_queue.h"
#include "server/stop_sequences.h"

namespace reprise::server {

class GenerationJob {
 public:
  // `request.cancel` is set to this job's flag. `engine` must outlive the job.
  GenerationJob(Engine& engine, GenerateRequest request, std::vector<std::string> stop);
  // Cancels a generation still running and waits for its thread.
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  // The flag that cancels the request; also pass it to RequestQueue::Admit.
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }

  // Starts generating; `admission` is held until the generation ends.
  void Start(RequestQueue::Admission admission);

  struct Update {
    std::string text;       // new text since the last call (stop sequences removed)
    bool finished = false;  // the generation has ended: result() is ready
  };
  // Waits until there is new text or the generation ended, at most `timeout`.
  Update Next(std::chrono::milliseconds timeout);
  // Waits until the first text, or the end (an error before any token, an empty reply).
  void WaitForFirstText();

  void Cancel() { cancel_.store(true); }
  bool cancelled() const { return cancel_.load(); }

  // Valid once an Update said finished.
  const Result<GenerateResult>& result() const { return *result_; }
  bool stop_sequence_hit() const { return stop_sequence_hit_; }

 private:
  void Run(RequestQueue::Admission admission);

  Engine& engine_;
  GenerateRequest request_;
  StopSequences stops_;  // used by the generation thread only
  std::atomic<bool> cancel_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_ REPRISE_GUARDED_BY(mutex_);
  bool has_text_ REPRISE_GUARDED_BY(mutex_) = false;
  bool finished_ REPRISE_GUARDED_BY(mutex_) = false;
  // Written by the generation thread before `finished_` turns true, read after.
  std::optional<Result<GenerateResult>> result_;
  bool stop_sequence_hit_ = false;
};

}  // namespace reprise::server
