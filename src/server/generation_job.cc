#include "server/generation_job.h"

#include <cstdio>
#include <ctime>
#include <random>
#include <utility>

#include "server/request_body.h"
#include "server/stop_sequences.h"

namespace reprise::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kJson = "application/json";

// "chatcmpl-" / "cmpl-" and 24 random hex digits.
std::string NewResponseId(Endpoint endpoint) {
  thread_local std::mt19937_64 random(std::random_device{}());
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx%08llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random() & 0xffffffffu));
  return std::string(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + hex;
}

std::string Event(const std::string& payload) { return "data: " + payload + "\n\n"; }

HttpError ShuttingDown() {
  return HttpError{503,
                   ErrorBody(503, "the server is shutting down; the request was not finished")};
}

}  // namespace

GenerationJob::GenerationJob(const JobContext& context, Endpoint endpoint, std::string name_space,
                             HttpRequest request, std::shared_ptr<ResponseStream> response)
    : context_(context),
      endpoint_(endpoint),
      endpoint_name_(endpoint == Endpoint::kChat ? "chat" : "completions"),
      name_space_(std::move(name_space)),
      request_(std::move(request)),
      response_(std::move(response)),
      arrived_(Clock::now()),
      cancel_(std::make_shared<std::atomic<bool>>(false)) {
  response_->OnClientGone([cancel = cancel_] { cancel->store(true); });
}

GenerationJob::~GenerationJob() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void GenerationJob::Start() {
  thread_ = std::thread([this] {
    Run();
    response_->OnClientGone(nullptr);
    finished_.store(true, std::memory_order_release);
  });
}

void GenerationJob::Cancel() {
  shut_down_.store(true, std::memory_order_release);
  cancel_->store(true);
}

void GenerationJob::Count(int http_status) {
  context_.metrics.CountRequest(endpoint_name_, http_status);
  if (http_status == 499) context_.metrics.CountCancelled();
}

void GenerationJob::Refuse(const HttpError& error) {
  if (response_->client_gone()) {
    Count(499);
    return;
  }
  Count(error.http_status);
  response_->Send(HttpResponse{error.http_status, kJson, error.body, {}});
}

void GenerationJob::Run() {
  std::string body = std::move(request_.body);
  if (std::optional<HttpError> bad = DecodeContentEncoding(request_.HeaderList("Content-Encoding"),
                                                           body, context_.max_body_bytes)) {
    Refuse(*bad);
    return;
  }
  Result<ServeRequest> parsed = endpoint_ == Endpoint::kChat
                                    ? ParseChatCompletionRequest(body, context_.limits)
                                    : ParseCompletionRequest(body, context_.limits);
  body = std::string();
  if (!parsed.ok()) {
    Refuse(ErrorFromStatus(parsed.error()));
    return;
  }
  if (!parsed->model.empty() && parsed->model != context_.model_name) {
    Refuse(HttpError{
        404, ErrorBody(404,
                       "The model '" + parsed->model + "' does not exist: this server serves '" +
                           context_.model_name + "'",
                       "model_not_found")});
    return;
  }
  GenerateRequest generate = std::move(parsed->generate);
  generate.name_space = name_space_;
  generate.cancel = cancel_.get();
  if (context_.max_prompt_tokens > 0) generate.max_prompt_tokens = context_.max_prompt_tokens;

  Result<RequestQueue::Admission> admission = context_.queue.Admit(cancel_.get());
  if (!admission.ok()) {
    Refuse(shut_down() ? ShuttingDown() : ErrorFromStatus(admission.error()));
    return;
  }
  const double queue_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - arrived_).count();
  const ResponseHeader header{endpoint_, NewResponseId(endpoint_),
                              static_cast<int64_t>(std::time(nullptr)), context_.model_name};
  StopSequences stops(parsed->stop);
  std::string text;  // a whole reply's text
  bool began = false;
  bool first = true;
  auto take = [&](const std::string& piece) {
    if (piece.empty()) return;
    if (!parsed->stream) {
      text += piece;
      return;
    }
    if (!began) {
      response_->Begin(200, "text/event-stream",
                       {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
      began = true;
    }
    response_->Write(Event(StreamChunk(header, piece, first, "")));
    first = false;
  };
  Result<GenerateResult> result = context_.engine.Generate(generate, [&](std::string_view piece) {
    take(stops.Feed(piece));
    return !stops.found();
  });
  if (result.ok()) take(stops.Flush());
  const bool stop_sequence_hit = stops.found();
  *admission = RequestQueue::Admission();  // the session is free for the next request
  Conclude(result, header, *parsed, std::move(text), began, stop_sequence_hit, queue_ms);
}

void GenerationJob::Conclude(const Result<GenerateResult>& result, const ResponseHeader& header,
                             const ServeRequest& request, std::string text, bool began,
                             bool stop_sequence_hit, double queue_ms) {
  if (response_->client_gone()) {
    Count(499);
    return;
  }
  std::optional<HttpError> error;
  if (!result.ok()) {
    error = shut_down() && result.error().code() == StatusCode::kCancelled
                ? ShuttingDown()
                : ErrorFromStatus(result.error());
  } else if (result->stop_reason == "cancelled") {
    error = ShuttingDown();  // not the client (it is here): the drain's time ran out
  }
  if (error) {
    Count(error->http_status);
    if (!began) {
      response_->Send(HttpResponse{error->http_status, kJson, error->body, {}});
      return;
    }
    response_->Write(Event(error->body));
    response_->Write(Event("[DONE]"));
    response_->End();
    return;
  }
  const std::string_view finish = FinishReason(result->stop_reason, stop_sequence_hit);
  context_.metrics.ObserveGeneration(*result, queue_ms / 1000.0);
  Count(200);
  if (!request.stream) {
    response_->Send(
        HttpResponse{200, kJson, CompletionBody(header, *result, text, finish, queue_ms), {}});
    return;
  }
  if (!began) {
    response_->Begin(200, "text/event-stream",
                     {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
  }
  response_->Write(Event(StreamChunk(header, "", /*first=*/!began, finish)));
  if (request.include_usage) response_->Write(Event(UsageChunk(header, *result, queue_ms)));
  response_->Write(Event("[DONE]"));
  response_->End();
}

}  // namespace reprise::server
