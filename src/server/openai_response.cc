#include "server/openai_response.h"

#include <nlohmann/json.hpp>

namespace reprise::server {
namespace {

using nlohmann::json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* ObjectName(Endpoint endpoint, bool chunk) {
  if (endpoint == Endpoint::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json Usage(const GenerateResult& result) {
  const int prompt = static_cast<int>(result.prompt_tokens.size());
  const int completion = static_cast<int>(result.generated_tokens.size());
  return json{{"prompt_tokens", prompt},
              {"completion_tokens", completion},
              {"total_tokens", prompt + completion},
              {"prompt_tokens_details", {{"cached_tokens", CachedTokens(result.reuse)}}}};
}

json Reprise(const GenerateResult& result, double queue_ms) {
  const ReuseReport& r = result.reuse;
  return json{{"ttft_ms", result.ttft_ms},
              {"queue_ms", queue_ms},
              {"tokens_prefix", r.tokens_prefix},
              {"tokens_prefix_inexact", r.tokens_prefix_inexact},
              {"tokens_reused", r.tokens_reused},
              {"tokens_recomputed", r.tokens_recomputed},
              {"tokens_stable", r.tokens_stable},
              {"tokens_new", r.tokens_new},
              {"chunks_from_memory", r.chunks_from_memory},
              {"chunks_from_flash", r.chunks_from_flash},
              {"guard_fallbacks", r.guard_fallbacks},
              {"decode_tokens_per_second", result.decode_tokens_per_second},
              {"namespace", result.name_space},
              {"found_runs", r.found_runs}};
}

json Header(const ResponseHeader& header, bool chunk) {
  return json{{"id", header.id},
              {"object", ObjectName(header.endpoint, chunk)},
              {"created", header.created},
              {"model", header.model}};
}

json FinishValue(std::string_view finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(std::string(finish_reason));
}

}  // namespace

std::string_view FinishReason(std::string_view stop_reason, bool stop_sequence_hit) {
  if (stop_sequence_hit) return "stop";
  if (stop_reason == "length" || stop_reason == "context full") return "length";
  return "stop";
}

int CachedTokens(const ReuseReport& reuse) { return reuse.tokens_prefix + reuse.tokens_reused; }

std::string CompletionBody(const ResponseHeader& header, const GenerateResult& result,
                           std::string_view text, std::string_view finish_reason,
                           double queue_ms) {
  json body = Header(header, false);
  json choice = {{"index", 0}, {"finish_reason", FinishValue(finish_reason)}, {"logprobs", nullptr}};
  if (header.endpoint == Endpoint::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", std::string(text)}};
  } else {
    choice["text"] = std::string(text);
  }
  body["choices"] = json::array({choice});
  body["usage"] = Usage(result);
  body["reprise"] = Reprise(result, queue_ms);
  return Dump(body);
}

std::string StreamChunk(const ResponseHeader& header, std::string_view text, bool first,
                        std::string_view finish_reason) {
  json chunk = Header(header, true);
  json choice = {{"index", 0}, {"finish_reason", FinishValue(finish_reason)}, {"logprobs", nullptr}};
  if (header.endpoint == Endpoint::kChat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || finish_reason.empty()) delta["content"] = std::string(text);
    choice["delta"] = delta;
  } else {
    choice["text"] = std::string(text);
  }
  chunk["choices"] = json::array({choice});
  return Dump(chunk);
}

std::string UsageChunk(const ResponseHeader& header, const GenerateResult& result,
                       double queue_ms) {
  json chunk = Header(header, true);
  chunk["choices"] = json::array();
  chunk["usage"] = Usage(result);
  chunk["reprise"] = Reprise(result, queue_ms);
  return Dump(chunk);
}

}  // namespace reprise::server
