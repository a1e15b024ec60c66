#include "server/generation_job.h"

#include <utility>

namespace reprise::server {

GenerationJob::GenerationJob(Engine& engine, GenerateRequest request,
                             std::vector<std::string> stop)
    : engine_(engine), request_(std::move(request)), stops_(std::move(stop)) {
  request_.cancel = &cancel_;
}

GenerationJob::~GenerationJob() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void GenerationJob::Start(RequestQueue::Admission admission) {
  thread_ = std::thread([this, admission = std::move(admission)]() mutable {
    Run(std::move(admission));
  });
}

void GenerationJob::Run(RequestQueue::Admission admission) {
  auto publish = [&](std::string text) {
    if (text.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ += text;
    has_text_ = true;
    changed_.notify_all();
  };
  Result<GenerateResult> result = engine_.Generate(request_, [&](std::string_view piece) {
    publish(stops_.Feed(piece));
    return !stops_.found();
  });
  stop_sequence_hit_ = stops_.found();
  if (result.ok()) publish(stops_.Flush());
  {
    RequestQueue::Admission released = std::move(admission);  // the session is free again
  }
  std::lock_guard<std::mutex> lock(mutex_);
  result_ = std::move(result);
  finished_ = true;
  changed_.notify_all();
}

GenerationJob::Update GenerationJob::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !pending_.empty() || finished_; });
  Update update;
  update.text = std::exchange(pending_, std::string());
  update.finished = finished_;
  return update;
}

void GenerationJob::WaitForFirstText() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return has_text_ || finished_; });
}

}  // namespace reprise::server
