#include "server/http_server.h"

#include <condition_variable>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/logging.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "server/api_keys.h"
#include "server/chat_page.h"
#include "server/generation_job.h"
#include "server/http_errors.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/request_queue.h"

namespace reprise::server {
namespace {

constexpr const char* kJson = "application/json";

// After the drain's time, how long cancelled requests have to send their last bytes before
// every connection is closed.
constexpr std::chrono::seconds kDrainGrace(10);

std::string Quote(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

struct HttpServer::Impl final : RequestHandler {
  Impl(Engine& engine_in, const ServerOptions& options_in, ApiKeys keys_in)
      : engine(engine_in),
        options(options_in),
        keys(std::move(keys_in)),
        queue(options_in.max_running, options_in.max_waiting),
        job_context{engine_in,
                    queue,
                    metrics,
                    options_in.model_name,
                    options_in.max_body_bytes,
                    options_in.limits,
                    options_in.max_prompt_tokens} {}

  void Handle(HttpRequest request, std::shared_ptr<ResponseStream> response) override;
  HttpResponse TransportError(int status, std::string message) override {
    metrics.CountRequest("other", status);
    return HttpResponse{status, kJson, ErrorBody(status, message), {}};
  }

  void Answer(ResponseStream& response, const std::string& endpoint, int status, std::string body,
              const char* content_type = kJson, HttpHeaders headers = {}) {
    metrics.CountRequest(endpoint, status);
    response.Send(HttpResponse{status, content_type, std::move(body), std::move(headers)});
  }
  void AnswerError(ResponseStream& response, const std::string& endpoint, int status,
                   std::string_view message, std::string_view code = "") {
    Answer(response, endpoint, status, ErrorBody(status, message, code));
  }

  // The namespace of an authorized request; answers 401 (400 for two Authorization headers)
  // and returns nullopt otherwise.
  std::optional<std::string> Authorize(const HttpRequest& request, ResponseStream& response,
                                       const std::string& endpoint);
  void HandleGenerate(HttpRequest request, std::shared_ptr<ResponseStream> response,
                      Endpoint endpoint);
  // Cancels every job still running; returns how many.
  int CancelJobs();

  Engine& engine;
  const ServerOptions options;
  const ApiKeys keys;
  RequestQueue queue;
  Metrics metrics;
  const JobContext job_context;
  std::atomic<bool> draining{false};
  // Before `jobs`: the jobs, destroyed first, use the transport's response streams.
  std::unique_ptr<HttpTransport> transport;
  std::mutex jobs_mutex;
  std::list<std::unique_ptr<GenerationJob>> jobs REPRISE_GUARDED_BY(jobs_mutex);
  std::thread drain_timer;
  std::mutex drain_mutex;
  std::condition_variable drain_done;
  bool served REPRISE_GUARDED_BY(drain_mutex) = false;
};

std::optional<std::string> HttpServer::Impl::Authorize(const HttpRequest& request,
                                                       ResponseStream& response,
                                                       const std::string& endpoint) {
  if (request.CountHeader("Authorization") > 1) {
    AnswerError(response, endpoint, 400, "the request has more than one Authorization header");
    return std::nullopt;
  }
  std::optional<std::string> name_space = keys.NamespaceOf(request.Header("Authorization"));
  if (!name_space) {
    AnswerError(response, endpoint, 401,
                "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
                "invalid_api_key");
  }
  return name_space;
}

void HttpServer::Impl::Handle(HttpRequest request, std::shared_ptr<ResponseStream> response) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  auto only = [&](const char* endpoint, const char* allowed) {
    Answer(*response, endpoint, 405, ErrorBody(405, "use " + std::string(allowed) + " for " + path),
           kJson, {{"Allow", allowed}});
  };
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    const Endpoint endpoint =
        path == "/v1/chat/completions" ? Endpoint::kChat : Endpoint::kCompletion;
    if (request.method != "POST") {
      only(endpoint == Endpoint::kChat ? "chat" : "completions", "POST");
      return;
    }
    HandleGenerate(std::move(request), std::move(response), endpoint);
  } else if (path == "/health") {
    if (!get) return only("health", "GET");
    if (draining.load()) {
      Answer(*response, "health", 503, "{\"status\":\"shutting down\"}");
    } else {
      Answer(*response, "health", 200, "{\"status\":\"ok\"}");
    }
  } else if (path == "/metrics") {
    if (!get) return only("metrics", "GET");
    Answer(*response, "metrics", 200,
           metrics.Render(engine.Stats(), queue.waiting(), queue.running()),
           "text/plain; version=0.0.4");
  } else if (path == "/v1/models") {
    if (!get) return only("models", "GET");
    if (!Authorize(request, *response, "models")) return;
    Answer(*response, "models", 200,
           "{\"object\":\"list\",\"data\":[{\"id\":" + Quote(options.model_name) +
               ",\"object\":\"model\",\"created\":0,\"owned_by\":\"reprise\"}]}");
  } else if (path == "/") {
    if (!get) return only("page", "GET");
    Answer(*response, "page", 200, std::string(ChatPageHtml()), "text/html; charset=utf-8");
  } else {
    AnswerError(*response, "other", 404, "no such endpoint: " + request.method + " " + path);
  }
}

void HttpServer::Impl::HandleGenerate(HttpRequest request, std::shared_ptr<ResponseStream> response,
                                      Endpoint endpoint) {
  const std::string endpoint_name = endpoint == Endpoint::kChat ? "chat" : "completions";
  if (draining.load()) {
    AnswerError(*response, endpoint_name, 503, "the server is shutting down");
    return;
  }
  std::optional<std::string> name_space = Authorize(request, *response, endpoint_name);
  if (!name_space) return;
  const std::string_view content_type = request.Header("Content-Type");
  if (!content_type.empty() && content_type.find("application/json") == std::string::npos) {
    AnswerError(*response, endpoint_name, 415,
                "the body must be JSON (Content-Type: application/json)");
    return;
  }
  auto job = std::make_unique<GenerationJob>(job_context, endpoint, std::move(*name_space),
                                             std::move(request), std::move(response));
  std::lock_guard<std::mutex> lock(jobs_mutex);
  // Jobs that have answered are joined here (their threads are ending).
  jobs.remove_if([](const std::unique_ptr<GenerationJob>& done) { return done->finished(); });
  job->Start();
  jobs.push_back(std::move(job));
}

int HttpServer::Impl::CancelJobs() {
  std::lock_guard<std::mutex> lock(jobs_mutex);
  int running = 0;
  for (const std::unique_ptr<GenerationJob>& job : jobs) {
    if (job->finished()) continue;
    job->Cancel();
    ++running;
  }
  return running;
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
  impl_->CancelJobs();
}

int HttpServer::port() const { return impl_->transport->port(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Create(Engine& engine,
                                                       const ServerOptions& options) {
  if (options.max_running < 1 || options.max_waiting < 0) {
    return InvalidArgumentError("max_running must be >= 1 and max_waiting >= 0");
  }
  if (options.max_body_bytes < 1024) return InvalidArgumentError("max body must be >= 1 KiB");
  if (options.drain_seconds < 0) return InvalidArgumentError("drain_seconds must be >= 0");
  REPRISE_ASSIGN_OR_RETURN(ApiKeys keys,
                           ApiKeys::Create(options.api_keys, options.default_namespace));
  auto impl = std::make_unique<Impl>(engine, options, std::move(keys));
  TransportOptions transport;
  transport.host = options.host;
  transport.port = options.port;
  transport.io_threads = options.io_threads;
  transport.max_body_bytes = options.max_body_bytes;
  transport.max_header_bytes = options.max_header_bytes;
  transport.max_header_count = options.max_header_count;
  transport.max_connections = options.max_connections;
  transport.max_connections_per_client = options.max_connections_per_client;
  transport.request_timeout = options.request_timeout;
  transport.idle_timeout = options.idle_timeout;
  transport.write_timeout = options.write_timeout;
  REPRISE_ASSIGN_OR_RETURN(impl->transport, HttpTransport::Create(transport, *impl));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Status HttpServer::Serve() {
  impl_->transport->Run();
  {
    std::lock_guard<std::mutex> lock(impl_->drain_mutex);
    impl_->served = true;
  }
  impl_->drain_done.notify_all();
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->draining.exchange(true)) return;
  impl_->transport->StopAccepting();
  Impl* self = impl_.get();
  impl_->drain_timer = std::thread([self] {
    std::unique_lock<std::mutex> lock(self->drain_mutex);
    auto served = [self] { return self->served; };
    if (self->drain_done.wait_for(lock, std::chrono::seconds(self->options.drain_seconds),
                                  served)) {
      return;
    }
    lock.unlock();
    // Time is up: what waits is refused, what runs is cancelled; both answer 503 (or an SSE
    // error event) on their own.
    self->queue.Close();
    if (const int cancelled = self->CancelJobs(); cancelled > 0) {
      REPRISE_LOG(kWarning) << "cancelling " << cancelled
                            << " requests still waiting or running after the drain time";
    }
    lock.lock();
    if (self->drain_done.wait_for(lock, kDrainGrace, served)) return;
    lock.unlock();
    REPRISE_LOG(kWarning) << "closing the connections still open after the drain";
    self->transport->CloseAll();
  });
}

}  // namespace reprise::server
