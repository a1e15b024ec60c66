// The server's Prometheus metrics (text exposition format 0.0.4, served at GET /metrics):
//   reprise_requests_total{endpoint, code}            requests answered, by HTTP status
//   reprise_ttft_seconds                               histogram of time to first token
//   reprise_queue_seconds                              histogram of time waiting for a slot
//   reprise_decode_tokens_per_second                   histogram, per request
//   reprise_prompt_tokens_total{kind}                  prefix, reused, recomputed, new
//   reprise_completion_tokens_total
//   reprise_chunk_hits_total{tier}                     memory, flash
//   reprise_requests_cancelled_total                   clients that went away
//   reprise_queue_length, reprise_requests_running     gauges, from the server
//   reprise_sessions, reprise_sessions_busy, reprise_cached_chunks,
//   reprise_store_bytes{tier}                          gauges, from EngineStats
//
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "reprise/engine.h"

namespace reprise::server {

// Cumulative histogram with fixed upper bounds (Prometheus' `le`), plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // Appends the _bucket, _sum and _count lines of `name`.
  void Render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> upper_bounds_;
  std::vector<int64_t> counts_;  // per bound, not cumulative; the last one is +Inf
  double sum_ = 0.0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();

  // One request answered with `http_status` on `endpoint` ("chat", "completions", ...).
  void CountRequest(const std::string& endpoint, int http_status);
  // A completed generation.
  void ObserveGeneration(const GenerateResult& result, double queue_seconds);
  void CountCancelled();

  // The exposition text; `engine` and the gauges are read at the moment of the scrape.
  std::string Render(const EngineStats& engine, int queue_length, int running) const;

 private:
  mutable Mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> requests_ REPRISE_GUARDED_BY(mutex_);
  Histogram ttft_seconds_ REPRISE_GUARDED_BY(mutex_);
  Histogram queue_seconds_ REPRISE_GUARDED_BY(mutex_);
  Histogram decode_tokens_per_second_ REPRISE_GUARDED_BY(mutex_);
  std::array<int64_t, 4> prompt_tokens_ REPRISE_GUARDED_BY(mutex_) = {};  // prefix .. new
  int64_t completion_tokens_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t hits_memory_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t hits_flash_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t cancelled_ REPRISE_GUARDED_BY(mutex_) = 0;
};

}  // namespace reprise::server
