#include "server/generation_job.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>
#include <utility>

#include "server/request_body.h"
#include "server/stop_sequences.h"
#include "server/tool_call_stream.h"

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

// The prompt's entries of an echo with logprobs: its tokens after a BOS the engine added
// (not part of the prompt's text); the first has no log-probability when nothing precedes it
// (NaN, written null).
std::vector<PositionLogprobs> EchoedPromptLogprobs(const GenerateResult& result) {
  const size_t skip =
      std::min(result.prompt_logprobs.size(), static_cast<size_t>(result.prompt_bos_tokens));
  return std::vector<PositionLogprobs>(result.prompt_logprobs.begin() + static_cast<long>(skip),
                                       result.prompt_logprobs.end());
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
  const int num_choices = generate.num_choices;
  std::vector<StopSequences> stops(static_cast<size_t>(num_choices), StopSequences(parsed->stop));
  std::vector<std::string> texts(static_cast<size_t>(num_choices));  // a whole reply's text
  std::vector<bool> first(static_cast<size_t>(num_choices), true);   // no chunk sent yet
  // An echoed prompt comes before each choice's text.
  const std::string echoed = parsed->echo ? generate.prompt : std::string();
  std::vector<size_t> sent_bytes(static_cast<size_t>(num_choices), 0);  // past the echo
  bool began = false;
  // With tools, a reply may hold calls: streamed, its text goes through a ToolCallStream per
  // choice (content and delta.tool_calls fragments as they are read); whole, it is read at
  // the end (ParseToolCalls).
  const bool tools = !parsed->tool_names.empty();
  std::vector<ToolCallStream> readers(
      tools && parsed->stream ? static_cast<size_t>(num_choices) : 0,
      ToolCallStream(parsed->tool_names, parsed->forced_tool));
  const auto begin_stream = [&] {
    if (began) return;
    response_->Begin(200, "text/event-stream",
                     {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
    began = true;
  };
  const auto send_events = [&](int choice, const std::vector<ToolStreamEvent>& events) {
    const size_t c = static_cast<size_t>(choice);
    for (const ToolStreamEvent& e : events) {
      begin_stream();
      if (e.kind == ToolStreamEvent::Kind::kContent) {
        response_->Write(Event(StreamChunk(header, choice, e.text, first[c], "")));
      } else {
        const bool starts = e.kind == ToolStreamEvent::Kind::kCallStart;
        response_->Write(Event(ToolCallFragmentChunk(
            header, choice, e.call_index, starts ? e.id : "", e.name, e.text, first[c])));
      }
      first[c] = false;
    }
  };
  // `opening`: send the choice's first chunk even without text (an empty reply's role).
  auto take = [&](int choice, const std::string& piece, bool opening = false) {
    const size_t c = static_cast<size_t>(choice);
    sent_bytes[c] += piece.size();
    if (!parsed->stream) {
      if (texts[c].empty()) texts[c] = echoed;
      texts[c] += piece;
      return;
    }
    if (tools && !opening) {
      std::vector<ToolStreamEvent> events;
      readers[c].Feed(piece, &events);
      send_events(choice, events);
      return;
    }
    if (piece.empty() && !(first[c] && (opening || !echoed.empty()))) return;
    begin_stream();
    const std::string text = first[c] ? echoed + piece : piece;
    response_->Write(Event(StreamChunk(header, choice, text, first[c], "")));
    first[c] = false;
  };
  Result<GenerateResult> result =
      context_.engine.GenerateChoices(generate, [&](int choice, std::string_view piece) {
        StopSequences& s = stops[static_cast<size_t>(choice)];
        take(choice, s.Feed(piece));
        return !s.found();
      });
  std::vector<ChoiceOutput> choices(static_cast<size_t>(num_choices));
  if (result.ok()) {
    for (int c = 0; c < num_choices; ++c) {
      const size_t i = static_cast<size_t>(c);
      take(c, stops[i].Flush());
      if (!readers.empty()) {
        std::vector<ToolStreamEvent> events;
        readers[i].Finish(&events);
        send_events(c, events);
      }
      const bool generated_nothing = parsed->stream ? first[i] : texts[i].empty();
      if (generated_nothing && !(tools && !parsed->stream)) {
        take(c, "", /*opening=*/true);  // an echo, an empty reply
      }
      ChoiceOutput& out = choices[i];
      const std::string& stop_reason =
          c == 0 ? result->stop_reason : result->more_choices[i - 1].stop_reason;
      out.finish_reason = std::string(FinishReason(stop_reason, stops[i].found()));
      out.text = std::move(texts[i]);
      if (tools) {
        ToolReply reply =
            readers.empty() ? ParseToolCalls(out.text, parsed->tool_names) : readers[i].reply();
        if (!reply.calls.empty()) {
          out.text = std::move(reply.content);
          out.tool_calls = std::move(reply.calls);
          out.finish_reason = "tool_calls";
        }
      }
      if (generate.return_logprobs) {
        out.has_logprobs = true;
        const std::vector<PositionLogprobs>& generated =
            c == 0 ? result->logprobs : result->more_choices[i - 1].logprobs;
        // The bytes sent of this choice's own text (past the echo), for SentLogprobs.
        std::vector<PositionLogprobs> kept =
            SentLogprobs(generated, stop_reason, stops[i].found(), sent_bytes[i]);
        if (parsed->echo) {
          out.logprobs = EchoedPromptLogprobs(*result);
          out.logprobs.insert(out.logprobs.end(), kept.begin(), kept.end());
        } else {
          out.logprobs = std::move(kept);
        }
      }
    }
  }
  *admission = RequestQueue::Admission();  // the session is free for the next request
  Conclude(result, header, *parsed, choices, began, queue_ms);
}

void GenerationJob::Conclude(const Result<GenerateResult>& result, const ResponseHeader& header,
                             const ServeRequest& request, const std::vector<ChoiceOutput>& choices,
                             bool began, double queue_ms) {
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
  context_.metrics.ObserveGeneration(*result, queue_ms / 1000.0);
  Count(200);
  if (!request.stream) {
    response_->Send(
        HttpResponse{200, kJson, CompletionBody(header, *result, choices, queue_ms), {}});
    return;
  }
  if (!began) {
    response_->Begin(200, "text/event-stream",
                     {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
  }
  for (size_t c = 0; c < choices.size(); ++c) {
    response_->Write(Event(StreamChunk(header, static_cast<int>(c), "", /*first=*/false,
                                       choices[c].finish_reason, &choices[c])));
  }
  if (request.include_usage) response_->Write(Event(UsageChunk(header, *result, queue_ms)));
  response_->Write(Event("[DONE]"));
  response_->End();
}

}  // namespace reprise::server
