#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "base/logging.h"
#include "base/status.h"
#include "server/api_keys.h"
#include "server/chat_page.h"
#include "server/generation_job.h"
#include "server/http_errors.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/request_queue.h"

namespace reprise::server {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

constexpr const char* kJson = "application/json";

// "chatcmpl-" / "cmpl-" and 24 random hex digits.
std::string NewResponseId(Endpoint endpoint) {
  thread_local std::mt19937_64 random(std::random_device{}());
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx%08llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random() & 0xffffffffu));
  return std::string(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + hex;
}

bool WriteAll(httplib::DataSink& sink, const std::string& data) {
  return sink.write(data.data(), data.size());
}

bool WriteEvent(httplib::DataSink& sink, const std::string& payload) {
  return WriteAll(sink, "data: " + payload + "\n\n");
}

// httplib listens with a backlog of 5 (fixed when Debian built the library): a burst of
// clients overflows it and the kernel drops their connections. Linux lets a listening
// socket's backlog be raised by calling listen() again.
class ListeningServer : public httplib::Server {
 public:
  bool RaiseBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace

struct HttpServer::Impl {
  Impl(Engine& engine_in, const ServerOptions& options_in, ApiKeys keys_in)
      : engine(engine_in),
        options(options_in),
        keys(std::move(keys_in)),
        queue(options_in.max_running, options_in.max_waiting) {}

  Engine& engine;
  const ServerOptions options;
  const ApiKeys keys;
  RequestQueue queue;
  Metrics metrics;
  ListeningServer http;
  int port = 0;
  std::atomic<bool> draining{false};
  std::mutex jobs_mutex;
  std::set<GenerationJob*> jobs;  // running, so that a drain can cancel them
  std::thread drain_timer;
  std::mutex drain_mutex;
  std::condition_variable drain_done;
  bool served = false;

  void Answer(httplib::Response& res, const std::string& endpoint, int status,
              const std::string& body, const char* content_type = kJson) {
    res.status = status;
    res.set_content(body, content_type);
    metrics.CountRequest(endpoint, status);
  }
  void AnswerError(httplib::Response& res, const std::string& endpoint, int status,
                   std::string_view message, std::string_view code = "") {
    Answer(res, endpoint, status, ErrorBody(status, message, code));
  }
  void AnswerStatus(httplib::Response& res, const std::string& endpoint, const Status& status) {
    const HttpError error = ErrorFromStatus(status);
    Answer(res, endpoint, error.http_status, error.body);
  }

  // The namespace of an authorized request; answers 401 and returns nullopt otherwise.
  std::optional<std::string> Authorize(const httplib::Request& req, httplib::Response& res,
                                       const std::string& endpoint) {
    std::optional<std::string> name_space =
        keys.NamespaceOf(req.get_header_value("Authorization"));
    if (!name_space) {
      AnswerError(res, endpoint, 401,
                  "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
                  "invalid_api_key");
    }
    return name_space;
  }

  void HandleModels(const httplib::Request& req, httplib::Response& res) {
    if (!Authorize(req, res, "models")) return;
    const std::string body =
        "{\"object\":\"list\",\"data\":[{\"id\":" + nlohmann_quote(options.model_name) +
        ",\"object\":\"model\",\"created\":0,\"owned_by\":\"reprise\"}]}";
    Answer(res, "models", 200, body);
  }

  static std::string nlohmann_quote(const std::string& text);

  // One response being written, shared by httplib's content provider and its releaser.
  struct Reply {
    std::shared_ptr<GenerationJob> job;
    ResponseHeader header;
    std::string endpoint_name;
    double queue_ms = 0.0;
    bool include_usage = false;
    std::string text;  // text not yet written (streams) or all of it (whole replies)
    std::atomic<bool> counted{false};
  };

  void HandleGenerate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  bool WriteStream(Reply& reply, httplib::DataSink& sink);
  bool WriteWhole(Reply& reply, httplib::DataSink& sink);
  // Counts the request in the metrics and forgets its job, once; `client_gone` cancels it.
  void Finished(Reply& reply, bool client_gone);
};

}  // namespace reprise::server

// nlohmann is used for one string here; kept out of the header.
#include <nlohmann/json.hpp>

namespace reprise::server {

std::string HttpServer::Impl::nlohmann_quote(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void HttpServer::Impl::HandleGenerate(const httplib::Request& req, httplib::Response& res,
                                      Endpoint endpoint) {
  const Clock::time_point arrived = Clock::now();
  const std::string endpoint_name = endpoint == Endpoint::kChat ? "chat" : "completions";
  if (draining.load()) {
    AnswerError(res, endpoint_name, 503, "the server is shutting down");
    return;
  }
  std::optional<std::string> name_space = Authorize(req, res, endpoint_name);
  if (!name_space) return;
  const std::string content_type = req.get_header_value("Content-Type");
  if (!content_type.empty() && content_type.find("application/json") == std::string::npos) {
    AnswerError(res, endpoint_name, 415, "the body must be JSON (Content-Type: application/json)");
    return;
  }
  Result<ServeRequest> parsed = endpoint == Endpoint::kChat
                                    ? ParseChatCompletionRequest(req.body, options.limits)
                                    : ParseCompletionRequest(req.body, options.limits);
  if (!parsed.ok()) {
    AnswerStatus(res, endpoint_name, parsed.error());
    return;
  }
  if (!parsed->model.empty() && parsed->model != options.model_name) {
    AnswerError(res, endpoint_name, 404,
                "The model '" + parsed->model + "' does not exist: this server serves '" +
                    options.model_name + "'",
                "model_not_found");
    return;
  }
  GenerateRequest request = std::move(parsed->generate);
  request.name_space = *name_space;
  if (options.max_prompt_tokens > 0) request.max_prompt_tokens = options.max_prompt_tokens;
  auto job = std::make_shared<GenerationJob>(engine, std::move(request), parsed->stop);

  Result<RequestQueue::Admission> admission = queue.Admit(job->cancel_flag());
  if (!admission.ok()) {
    AnswerStatus(res, endpoint_name, admission.error());
    return;
  }
  const double queue_ms = MsSince(arrived);
  {
    std::lock_guard<std::mutex> lock(jobs_mutex);
    jobs.insert(job.get());
  }
  job->Start(std::move(*admission));
  job->WaitForFirstText();

  ResponseHeader header{endpoint, NewResponseId(endpoint),
                        static_cast<int64_t>(std::time(nullptr)), options.model_name};
  // An error before the first token (an over-long prompt, a bad namespace) gets its status.
  GenerationJob::Update peek = job->Next(std::chrono::milliseconds(0));
  if (peek.finished && !job->result().ok() && peek.text.empty()) {
    {
      std::lock_guard<std::mutex> lock(jobs_mutex);
      jobs.erase(job.get());
    }
    AnswerStatus(res, endpoint_name, job->result().error());
    return;
  }
  // What the response writer needs; shared with httplib's provider and releaser.
  auto reply = std::make_shared<Reply>();
  reply->job = job;
  reply->header = header;
  reply->endpoint_name = endpoint_name;
  reply->queue_ms = queue_ms;
  reply->include_usage = parsed->include_usage;
  reply->text = std::move(peek.text);
  res.status = 200;
  auto releaser = [this, reply](bool) { Finished(*reply, /*client_gone=*/true); };
  if (parsed->stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, reply](size_t, httplib::DataSink& sink) { return WriteStream(*reply, sink); },
        releaser);
  } else {
    res.set_chunked_content_provider(
        kJson, [this, reply](size_t, httplib::DataSink& sink) { return WriteWhole(*reply, sink); },
        releaser);
  }
}

bool HttpServer::Impl::WriteStream(Reply& reply, httplib::DataSink& sink) {
  GenerationJob& job = *reply.job;
  bool first = true;
  auto send_text = [&](const std::string& text) {
    if (text.empty()) return true;
    const bool ok = WriteEvent(sink, StreamChunk(reply.header, text, first, ""));
    first = false;
    return ok;
  };
  bool ok = send_text(std::exchange(reply.text, std::string()));
  while (ok) {
    GenerationJob::Update update = job.Next(std::chrono::milliseconds(1000));
    ok = send_text(update.text);
    // An SSE comment each quiet second finds a client that went away.
    if (ok && update.text.empty() && !update.finished) ok = WriteAll(sink, ": waiting\n\n");
    if (!ok || !update.finished) continue;
    const Result<GenerateResult>& result = job.result();
    if (!result.ok()) {
      ok = WriteEvent(sink, ErrorFromStatus(result.error()).body);
    } else {
      const std::string_view finish = FinishReason(result->stop_reason, job.stop_sequence_hit());
      ok = WriteEvent(sink, StreamChunk(reply.header, "", first, finish));
      if (ok && reply.include_usage) {
        ok = WriteEvent(sink, UsageChunk(reply.header, *result, reply.queue_ms));
      }
    }
    ok = ok && WriteAll(sink, "data: [DONE]\n\n");
    if (!ok) break;
    Finished(reply, /*client_gone=*/false);
    sink.done();
    return true;
  }
  Finished(reply, /*client_gone=*/true);
  return false;
}

bool HttpServer::Impl::WriteWhole(Reply& reply, httplib::DataSink& sink) {
  GenerationJob& job = *reply.job;
  while (true) {
    GenerationJob::Update update = job.Next(std::chrono::milliseconds(1000));
    reply.text += update.text;
    if (update.finished) break;
    // JSON may start with white space: a space each quiet second finds a client that went
    // away.
    if (update.text.empty() && !WriteAll(sink, " ")) {
      Finished(reply, /*client_gone=*/true);
      return false;
    }
  }
  const Result<GenerateResult>& result = job.result();
  const std::string body =
      result.ok() ? CompletionBody(reply.header, *result, reply.text,
                                   FinishReason(result->stop_reason, job.stop_sequence_hit()),
                                   reply.queue_ms)
                  : ErrorFromStatus(result.error()).body;
  if (!WriteAll(sink, body)) {
    Finished(reply, /*client_gone=*/true);
    return false;
  }
  Finished(reply, /*client_gone=*/false);
  sink.done();
  return true;
}

void HttpServer::Impl::Finished(Reply& reply, bool client_gone) {
  if (reply.counted.exchange(true)) return;
  GenerationJob& job = *reply.job;
  if (client_gone) {
    job.Cancel();
    metrics.CountCancelled();
    metrics.CountRequest(reply.endpoint_name, 499);
  } else {
    // The generation has ended (the writers call this only after `finished`).
    const Result<GenerateResult>& result = job.result();
    if (result.ok()) {
      metrics.ObserveGeneration(*result, reply.queue_ms / 1000.0);
      metrics.CountRequest(reply.endpoint_name, 200);
    } else {
      metrics.CountRequest(reply.endpoint_name, HttpStatusOf(result.error().code()));
    }
  }
  std::lock_guard<std::mutex> lock(jobs_mutex);
  jobs.erase(&job);
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(impl_->drain_mutex);
    impl_->served = true;  // Serve has returned (or never ran): the drain timer may end
  }
  impl_->drain_done.notify_all();
  if (impl_->drain_timer.joinable()) impl_->drain_timer.join();
}

int HttpServer::port() const { return impl_->port; }

Result<std::unique_ptr<HttpServer>> HttpServer::Create(Engine& engine,
                                                       const ServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgumentError("port must be in [0, 65535]");
  }
  if (options.max_running < 1 || options.max_waiting < 0) {
    return InvalidArgumentError("max_running must be >= 1 and max_waiting >= 0");
  }
  if (options.max_body_bytes < 1024) return InvalidArgumentError("max body must be >= 1 KiB");
  REPRISE_ASSIGN_OR_RETURN(ApiKeys keys, ApiKeys::Create(options.api_keys, options.default_namespace));
  auto impl = std::make_unique<Impl>(engine, options, std::move(keys));
  Impl* self = impl.get();
  httplib::Server& http = impl->http;

  // Enough workers for every running and waiting request plus a few for /health, /metrics.
  const size_t workers = static_cast<size_t>(options.max_running + options.max_waiting + 8);
  http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  http.set_read_timeout(30, 0);
  http.set_write_timeout(30, 0);
  // httplib answers some errors itself (413 body too large, 404 no route, 400 bad request
  // line) with an empty body: give them OpenAI's error shape.
  http.set_error_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 413) {
      message = "the body is larger than the server's limit of " +
                std::to_string(self->options.max_body_bytes) + " bytes";
    } else if (res.status == 404) {
      message = "no such endpoint: " + req.method + " " + req.path;
    }
    res.set_content(ErrorBody(res.status, message), kJson);
    self->metrics.CountRequest("other", res.status);
  });
  http.set_exception_handler(
      [self](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown";
        try {
          if (error) std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        REPRISE_LOG(kError) << "request failed with an exception: " << what;
        res.status = 500;
        res.set_content(ErrorBody(500, "internal error: " + what), kJson);
        self->metrics.CountRequest("other", 500);
      });

  http.Post("/v1/chat/completions", [self](const httplib::Request& req, httplib::Response& res) {
    self->HandleGenerate(req, res, Endpoint::kChat);
  });
  http.Post("/v1/completions", [self](const httplib::Request& req, httplib::Response& res) {
    self->HandleGenerate(req, res, Endpoint::kCompletion);
  });
  http.Get("/v1/models", [self](const httplib::Request& req, httplib::Response& res) {
    self->HandleModels(req, res);
  });
  http.Get("/health", [self](const httplib::Request&, httplib::Response& res) {
    if (self->draining.load()) {
      self->Answer(res, "health", 503, "{\"status\":\"shutting down\"}");
    } else {
      self->Answer(res, "health", 200, "{\"status\":\"ok\"}");
    }
  });
  http.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    const std::string text =
        self->metrics.Render(self->engine.Stats(), self->queue.waiting(), self->queue.running());
    self->Answer(res, "metrics", 200, text, "text/plain; version=0.0.4");
  });
  http.Get("/", [self](const httplib::Request&, httplib::Response& res) {
    self->Answer(res, "page", 200, std::string(ChatPageHtml()), "text/html; charset=utf-8");
  });

  if (options.port == 0) {
    impl->port = http.bind_to_any_port(options.host);
    if (impl->port <= 0) {
      return UnavailableError("cannot bind to " + options.host + " on any port");
    }
  } else {
    if (!http.bind_to_port(options.host, options.port)) {
      return UnavailableError("cannot bind to " + options.host + ":" +
                              std::to_string(options.port) +
                              " (in use, or not an address of this machine)");
    }
    impl->port = options.port;
  }
  if (!impl->http.RaiseBacklog(1024)) {
    REPRISE_LOG(kWarning) << "could not raise the listen backlog: bursts of connections may be "
                             "dropped";
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Status HttpServer::Serve() {
  const bool ok = impl_->http.listen_after_bind();
  {
    std::lock_guard<std::mutex> lock(impl_->drain_mutex);
    impl_->served = true;
  }
  impl_->drain_done.notify_all();
  if (!ok && !impl_->draining.load()) return UnavailableError("the server stopped listening");
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->draining.exchange(true)) return;
  impl_->http.stop();  // no new connections; taken requests run on
  // Requests still running after drain_seconds are cancelled.
  Impl* self = impl_.get();
  impl_->drain_timer = std::thread([self] {
    std::unique_lock<std::mutex> lock(self->drain_mutex);
    if (self->drain_done.wait_for(lock, std::chrono::seconds(self->options.drain_seconds),
                                  [self] { return self->served; })) {
      return;
    }
    std::lock_guard<std::mutex> jobs_lock(self->jobs_mutex);
    REPRISE_LOG(kWarning) << "cancelling " << self->jobs.size()
                          << " requests still running after the drain time";
    for (GenerationJob* job : self->jobs) job->Cancel();
  });
}

}  // namespace reprise::server
