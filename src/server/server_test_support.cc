#include "server/server_test_support.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace reprise::server::test_support {

RunningServer::RunningServer(const std::string& model, int sessions, int context_tokens,
                             ServerOptions options) {
  EngineOptions engine_options;
  engine_options.model_path = model;
  engine_options.context_tokens = context_tokens;
  engine_options.num_threads = 2;
  engine_options.sessions = sessions;
  engine_options.reuse = ReuseMethod::kBlend;
  engine_options.cache_mb = 64;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(engine_options);
  if (!engine.ok()) {
    error_ = engine.error().ToString();
    return;
  }
  engine_ = std::move(*engine);
  options.port = 0;
  if (options.model_name.empty()) options.model_name = "test-model";
  options.max_running = sessions;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Create(*engine_, options);
  if (!server.ok()) {
    error_ = server.error().ToString();
    return;
  }
  server_ = std::move(*server);
  serving_ = std::thread([this] { served_ = server_->Serve(); });
}

RunningServer::~RunningServer() { Stop(); }

void RunningServer::Stop() {
  if (!server_) return;
  server_->Stop();
  if (serving_.joinable()) serving_.join();
}

std::vector<nlohmann::json> SseEvents(const std::string& body, bool* done) {
  std::vector<nlohmann::json> events;
  *done = false;
  size_t at = 0;
  while (true) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string event = body.substr(at, end - at);
    at = end + 2;
    if (event.rfind("data: ", 0) != 0) continue;
    const std::string data = event.substr(6);
    if (data == "[DONE]") {
      *done = true;
      continue;
    }
    events.push_back(nlohmann::json::parse(data, nullptr, false));
  }
  return events;
}

std::string Compress(const std::string& text, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace reprise::server::test_support
