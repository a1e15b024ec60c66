#include "server/metrics.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace reprise::server {
namespace {

std::string Number(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

void Line(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += " " + Number(value) + "\n";
}

void Help(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < upper_bounds_.size() && value > upper_bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(const std::string& name, std::string& out) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    cumulative += counts_[i];
    const double bound = i < upper_bounds_.size() ? upper_bounds_[i] : INFINITY;
    Line(out, name + "_bucket", "le=\"" + Number(bound) + "\"", static_cast<double>(cumulative));
  }
  Line(out, name + "_sum", "", sum_);
  Line(out, name + "_count", "", static_cast<double>(count_));
}

Metrics::Metrics()
    : ttft_seconds_({0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      queue_seconds_({0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60}),
      decode_tokens_per_second_({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000}) {}

void Metrics::CountRequest(const std::string& endpoint, int http_status) {
  MutexLock lock(mutex_);
  ++requests_[{endpoint, http_status}];
}

void Metrics::ObserveGeneration(const GenerateResult& result, double queue_seconds) {
  MutexLock lock(mutex_);
  ttft_seconds_.Observe(result.ttft_ms / 1000.0);
  queue_seconds_.Observe(queue_seconds);
  if (result.decode_tokens_per_second > 0) {
    decode_tokens_per_second_.Observe(result.decode_tokens_per_second);
  }
  prompt_tokens_[0] += result.reuse.tokens_prefix;
  prompt_tokens_[1] += result.reuse.tokens_reused;
  prompt_tokens_[2] += result.reuse.tokens_recomputed;
  prompt_tokens_[3] += result.reuse.tokens_new;
  completion_tokens_ += static_cast<int64_t>(result.generated_tokens.size());
  hits_memory_ += result.reuse.chunks_from_memory;
  hits_flash_ += result.reuse.chunks_from_flash;
}

void Metrics::CountCancelled() {
  MutexLock lock(mutex_);
  ++cancelled_;
}

std::string Metrics::Render(const EngineStats& engine, int queue_length, int running) const {
  MutexLock lock(mutex_);
  std::string out;
  Help(out, "reprise_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, count] : requests_) {
    Line(out, "reprise_requests_total",
         "endpoint=\"" + key.first + "\",code=\"" + std::to_string(key.second) + "\"",
         static_cast<double>(count));
  }
  Help(out, "reprise_ttft_seconds", "histogram", "Time to first token of each generation.");
  ttft_seconds_.Render("reprise_ttft_seconds", out);
  Help(out, "reprise_queue_seconds", "histogram", "Time a request waited for a free session.");
  queue_seconds_.Render("reprise_queue_seconds", out);
  Help(out, "reprise_decode_tokens_per_second", "histogram", "Decode speed of each generation.");
  decode_tokens_per_second_.Render("reprise_decode_tokens_per_second", out);
  Help(out, "reprise_prompt_tokens_total", "counter",
       "Prompt tokens by where their KV came from: an exact cached prefix, cached chunks at new "
       "positions (reused as they were or recomputed), or computed new.");
  const char* kinds[] = {"prefix", "reused", "recomputed", "new"};
  for (int i = 0; i < 4; ++i) {
    Line(out, "reprise_prompt_tokens_total", std::string("kind=\"") + kinds[i] + "\"",
         static_cast<double>(prompt_tokens_[i]));
  }
  Help(out, "reprise_completion_tokens_total", "counter", "Generated tokens.");
  Line(out, "reprise_completion_tokens_total", "", static_cast<double>(completion_tokens_));
  Help(out, "reprise_chunk_hits_total", "counter", "Cached chunks reused, by the tier they came from.");
  Line(out, "reprise_chunk_hits_total", "tier=\"memory\"", static_cast<double>(hits_memory_));
  Line(out, "reprise_chunk_hits_total", "tier=\"flash\"", static_cast<double>(hits_flash_));
  Help(out, "reprise_requests_cancelled_total", "counter",
       "Generations stopped because the client went away.");
  Line(out, "reprise_requests_cancelled_total", "", static_cast<double>(cancelled_));
  Help(out, "reprise_queue_length", "gauge", "Requests waiting for a free session.");
  Line(out, "reprise_queue_length", "", queue_length);
  Help(out, "reprise_requests_running", "gauge", "Requests generating now.");
  Line(out, "reprise_requests_running", "", running);
  Help(out, "reprise_sessions", "gauge", "Sessions (KV caches) made so far.");
  Line(out, "reprise_sessions", "", engine.sessions);
  Help(out, "reprise_sessions_busy", "gauge", "Sessions running a request.");
  Line(out, "reprise_sessions_busy", "", engine.sessions_busy);
  Help(out, "reprise_cached_chunks", "gauge", "KV chunks in the cache or store.");
  Line(out, "reprise_cached_chunks", "", static_cast<double>(engine.chunks));
  Help(out, "reprise_store_bytes", "gauge", "Bytes of cached KV, by tier.");
  Line(out, "reprise_store_bytes", "tier=\"memory\"", static_cast<double>(engine.bytes_in_memory));
  Line(out, "reprise_store_bytes", "tier=\"disk\"", static_cast<double>(engine.bytes_on_disk));
  Help(out, "reprise_evictions_total", "counter", "Chunks evicted from memory or flash.");
  Line(out, "reprise_evictions_total", "", static_cast<double>(engine.evictions));
  Help(out, "reprise_decode_batch_calls_total", "counter",
       "Graph calls that ran the decode steps of concurrent sessions together.");
  Line(out, "reprise_decode_batch_calls_total", "", static_cast<double>(engine.decode_batch_calls));
  Help(out, "reprise_decode_batch_steps_total", "counter",
       "Session decode steps run in those calls (steps / calls = mean batch size).");
  Line(out, "reprise_decode_batch_steps_total", "", static_cast<double>(engine.decode_batch_steps));
  if (!engine.remote_server.empty()) {
    Help(out, "reprise_remote_lookups_total", "counter",
         "Remote tier lookups (after memory and flash missed), by result: a chunk that passed "
         "its checks, none (absent or the server unavailable), or a bad value (never used).");
    Line(out, "reprise_remote_lookups_total", "result=\"hit\"",
         static_cast<double>(engine.remote_hits));
    Line(out, "reprise_remote_lookups_total", "result=\"miss\"",
         static_cast<double>(engine.remote_misses));
    Line(out, "reprise_remote_lookups_total", "result=\"bad_value\"",
         static_cast<double>(engine.remote_bad_values));
    Help(out, "reprise_remote_unavailable_total", "counter",
         "Remote operations that gave up: down, timed out, backing off or busy.");
    Line(out, "reprise_remote_unavailable_total", "",
         static_cast<double>(engine.remote_unavailable));
    Help(out, "reprise_remote_chunks_sent_total", "counter", "Chunks written to the remote tier.");
    Line(out, "reprise_remote_chunks_sent_total", "",
         static_cast<double>(engine.remote_chunks_sent));
    Help(out, "reprise_remote_bytes_total", "counter", "Bytes read from and written to the remote tier.");
    Line(out, "reprise_remote_bytes_total", "direction=\"read\"",
         static_cast<double>(engine.remote_bytes_read));
    Line(out, "reprise_remote_bytes_total", "direction=\"written\"",
         static_cast<double>(engine.remote_bytes_written));
  }
  return out;
}

}  // namespace reprise::server
