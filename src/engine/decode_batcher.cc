#include "engine/decode_batcher.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace reprise::engine {

Result<std::unique_ptr<DecodeBatcher>> DecodeBatcher::Create(
    std::shared_ptr<const CompiledModel> compiled, int max_batch,
    std::chrono::microseconds max_wait) {
  if (!compiled) return InvalidArgumentError("no compiled model");
  if (max_batch < 1 || max_batch > kMaxBatch) {
    return InvalidArgumentError("a decode batch holds 1 to " + std::to_string(kMaxBatch) +
                                " sessions, not " + std::to_string(max_batch));
  }
  if (max_wait.count() < 0) return InvalidArgumentError("negative batching wait");
  std::unique_ptr<DecodeBatcher> b(new DecodeBatcher());
  REPRISE_ASSIGN_OR_RETURN(b->graph_, compiled->DecodeBatchGraph(max_batch));
  REPRISE_ASSIGN_OR_RETURN(b->context_, graph::ExecutionContext::Create(*b->graph_));
  b->executor_ = std::make_unique<graph::Executor>(compiled->pool(), compiled->kernels());
  b->compiled_ = std::move(compiled);
  b->max_batch_ = max_batch;
  b->max_wait_ = max_wait;
  b->rows_scratch_.reserve(static_cast<size_t>(max_batch));
  return b;
}

DecodeBatcher::Participant::Participant(DecodeBatcher* batcher) : batcher_(batcher) {
  if (batcher_) batcher_->Join();
}

DecodeBatcher::Participant::~Participant() {
  if (batcher_) batcher_->Leave();
}

void DecodeBatcher::Join() {
  MutexLock lock(mutex_);
  ++participants_;
}

void DecodeBatcher::Leave() {
  {
    MutexLock lock(mutex_);
    --participants_;
  }
  changed_.NotifyAll();  // the steps waiting for this one need not any more
}

Status DecodeBatcher::Step(const graph::BatchRow& row, std::span<float> logits) {
  if (static_cast<int64_t>(logits.size()) != graph_->vocab_size()) {
    return InvalidArgumentError("the logits buffer does not hold one vocabulary row");
  }
  Request request{row, logits, std::chrono::steady_clock::now()};
  MutexLock lock(mutex_);
  pending_.push_back(&request);
  changed_.NotifyAll();
  Request* batch[kMaxBatch];
  while (!request.done) {
    const int wanted = std::clamp(participants_, 1, max_batch_);
    // Stragglers are waited for up to max_wait_, or half a step when steps take longer (a
    // big batch): threads woken by the last step need CPU time to come back, and the pool's
    // workers hold the cores for a moment after each step.
    const auto wait = std::max<std::chrono::steady_clock::duration>(max_wait_, last_run_ / 2);
    const auto deadline = pending_.empty() ? std::chrono::steady_clock::time_point::max()
                                           : pending_.front()->arrival + wait;
    const bool ready = !pending_.empty() && (static_cast<int>(pending_.size()) >= wanted ||
                                             std::chrono::steady_clock::now() >= deadline);
    if (!running_ && ready) {
      // Lead: run the oldest pending steps (ours among them or not; we loop until ours ran).
      const int n = std::min({static_cast<int>(pending_.size()), max_batch_, kMaxBatch});
      for (int i = 0; i < n; ++i) {
        batch[i] = pending_.front();
        pending_.pop_front();
      }
      running_ = true;
      lock.Unlock();
      const auto started = std::chrono::steady_clock::now();
      const Status status = RunBatch(std::span<Request* const>(batch, static_cast<size_t>(n)));
      const auto took = std::chrono::steady_clock::now() - started;
      lock.Lock();
      last_run_ = took;
      for (int i = 0; i < n; ++i) {
        batch[i]->status = status;
        batch[i]->done = true;
      }
      running_ = false;
      ++stats_.steps;
      stats_.rows += n;
      stats_.max_rows = std::max<int64_t>(stats_.max_rows, n);
      changed_.NotifyAll();
      continue;
    }
    if (running_ || pending_.empty()) {
      changed_.Wait(lock);
    } else {
      changed_.WaitUntil(lock, deadline);
    }
  }
  return request.status;
}

Status DecodeBatcher::RunBatch(std::span<Request* const> batch) {
  rows_scratch_.clear();
  for (const Request* r : batch) rows_scratch_.push_back(r->row);
  REPRISE_RETURN_IF_ERROR(context_->SetBatchInputs(rows_scratch_));
  executor_->Run(*context_);
  const std::span<const float> all = context_->logits();
  const size_t vocab = static_cast<size_t>(graph_->vocab_size());
  for (size_t i = 0; i < batch.size(); ++i) {
    std::memcpy(batch[i]->logits.data(), all.data() + i * vocab, vocab * sizeof(float));
  }
  return Status::Ok();
}

DecodeBatcherStats DecodeBatcher::stats() const {
  MutexLock lock(mutex_);
  return stats_;
}

}  // namespace reprise::engine
