// One call of POST /v1/chat/completions or /v1/completions, from its body to its answer's last
// byte, on a thread of its own (the transport's I/O threads must not wait): the body decoded
// (Content-Encoding, bounded by its inflated size) and parsed, the request admitted to a
// session in arrival order (RequestQueue), generated, and answered through its
// ResponseStream:
//   - whole: the status and body once the generation ended (an error mid-way still gets its
//     own status);
//   - streamed: the head and the first event once there is text; an error before it gets its
//     own status, an error after it an SSE error event and [DONE].
// Stop sequences are applied here: the text sent never holds one, and generation stops at the
// first. The request is cancelled (the engine stops before its next graph call) when the
// client goes away, in the queue, during the prefill or while it generates, and when Cancel
// is called — the drain's time is over: what has not started is answered 503, a stream an
// SSE error event and [DONE]. Never a 200 without a body.
//
// Thread-safe: Cancel and finished may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "reprise/engine.h"
#include "server/http_errors.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_queue.h"

namespace reprise::server {

// What every job of one server shares; it must outlive the jobs.
struct JobContext {
  Engine& engine;
  RequestQueue& queue;
  Metrics& metrics;
  std::string model_name;      // the id requests may name
  int64_t max_body_bytes = 0;  // inflated
  RequestLimits limits;
  int max_prompt_tokens = 0;  // 0 = the context's limit
};

class GenerationJob {
 public:
  // `request` holds the body as it came (Content-Encoding still on it); `name_space` is the
  // one its API key maps to.
  GenerationJob(const JobContext& context, Endpoint endpoint, std::string name_space,
                HttpRequest request, std::shared_ptr<ResponseStream> response);
  // Cancels the job if it still runs and waits for its thread.
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  void Start();

  // The server is shutting down and will not wait: stop now, and answer 503 (or an SSE error
  // event) rather than as if the client had left.
  void Cancel();

  // The answer has been given (or its client is gone) and the thread is about to end.
  bool finished() const { return finished_.load(std::memory_order_acquire); }

 private:
  void Run();
  // Answers a whole error (nothing was sent before) and counts it.
  void Refuse(const HttpError& error);
  // Answers from the generation's result; `began` says whether a streamed head went out.
  void Conclude(const Result<GenerateResult>& result, const ResponseHeader& header,
                const ServeRequest& request, std::string text, bool began, bool stop_sequence_hit,
                double queue_ms);
  // Whether the request was stopped by Cancel (not by its client).
  bool shut_down() const { return shut_down_.load(std::memory_order_acquire); }
  void Count(int http_status);

  const JobContext& context_;
  const Endpoint endpoint_;
  const std::string endpoint_name_;
  const std::string name_space_;
  HttpRequest request_;
  const std::shared_ptr<ResponseStream> response_;
  const std::chrono::steady_clock::time_point arrived_;
  // The engine's and the queue's cancel flag: set by the client going away (through the
  // stream's callback, which may run after this job is gone: hence shared) or by Cancel.
  const std::shared_ptr<std::atomic<bool>> cancel_;
  // Release-acquire with the reads in Conclude: set before cancel_.
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace reprise::server
