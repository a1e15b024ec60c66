#include "server/openai_response.h"

#include <cmath>
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
  int completion = static_cast<int>(result.generated_tokens.size());
  for (const GeneratedChoice& c : result.more_choices) {
    completion += static_cast<int>(c.generated_tokens.size());
  }
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

// A token's text as OpenAI gives it, and its bytes (a token may hold part of a character).
json TokenBytes(const std::string& text) {
  json bytes = json::array();
  for (const unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

json ChatLogprobs(const std::vector<PositionLogprobs>& entries) {
  json content = json::array();
  for (const PositionLogprobs& e : entries) {
    json top = json::array();
    for (const TokenLogprob& t : e.top) {
      top.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", TokenBytes(t.text)}});
    }
    content.push_back({{"token", e.token.text},
                       {"logprob", e.token.logprob},
                       {"bytes", TokenBytes(e.token.text)},
                       {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

json CompletionLogprobs(const std::vector<PositionLogprobs>& entries) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       offsets = json::array();
  size_t offset = 0;
  for (const PositionLogprobs& e : entries) {
    tokens.push_back(e.token.text);
    token_logprobs.push_back(e.token.logprob);  // NaN is written null
    if (e.top.empty() && std::isnan(e.token.logprob)) {
      top_logprobs.push_back(nullptr);
    } else {
      json top = json::object();
      for (const TokenLogprob& t : e.top) top[t.text] = t.logprob;
      top_logprobs.push_back(std::move(top));
    }
    offsets.push_back(offset);
    offset += e.token.text.size();
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top_logprobs)},
              {"text_offset", std::move(offsets)}};
}

json ToolCallsValue(const std::vector<ToolCall>& calls) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", calls[i].id},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    list.push_back(std::move(call));
  }
  return list;
}

json LogprobsValue(Endpoint endpoint, const ChoiceOutput* choice) {
  if (choice == nullptr || !choice->has_logprobs) return nullptr;
  return endpoint == Endpoint::kChat ? ChatLogprobs(choice->logprobs)
                                     : CompletionLogprobs(choice->logprobs);
}

}  // namespace

std::vector<PositionLogprobs> SentLogprobs(const std::vector<PositionLogprobs>& logprobs,
                                           std::string_view stop_reason, bool stop_sequence_hit,
                                           size_t sent_bytes) {
  size_t count = logprobs.size();
  if (!stop_sequence_hit && stop_reason == "end of generation" && count > 0) --count;
  if (stop_sequence_hit) {
    size_t bytes = 0;
    size_t kept = 0;
    while (kept < count && bytes < sent_bytes) bytes += logprobs[kept++].token.text.size();
    count = kept;
  }
  return std::vector<PositionLogprobs>(logprobs.begin(), logprobs.begin() + count);
}

std::string_view FinishReason(std::string_view stop_reason, bool stop_sequence_hit) {
  if (stop_sequence_hit) return "stop";
  if (stop_reason == "length" || stop_reason == "context full") return "length";
  return "stop";
}

int CachedTokens(const ReuseReport& reuse) { return reuse.tokens_prefix + reuse.tokens_reused; }

std::string CompletionBody(const ResponseHeader& header, const GenerateResult& result,
                           const std::vector<ChoiceOutput>& choices, double queue_ms) {
  json body = Header(header, false);
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    json choice = {{"index", i},
                   {"finish_reason", FinishValue(c.finish_reason)},
                   {"logprobs", LogprobsValue(header.endpoint, &c)}};
    if (header.endpoint == Endpoint::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = ToolCallsValue(c.tool_calls);
      }
    } else {
      choice["text"] = c.text;
    }
    list.push_back(std::move(choice));
  }
  body["choices"] = std::move(list);
  body["usage"] = Usage(result);
  body["reprise"] = Reprise(result, queue_ms);
  return Dump(body);
}

std::string StreamChunk(const ResponseHeader& header, int index, std::string_view text, bool first,
                        std::string_view finish_reason, const ChoiceOutput* logprobs) {
  json chunk = Header(header, true);
  json choice = {{"index", index},
                 {"finish_reason", FinishValue(finish_reason)},
                 {"logprobs", LogprobsValue(header.endpoint, logprobs)}};
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

std::string ToolCallFragmentChunk(const ResponseHeader& header, int index, int call_index,
                                  std::string_view id, std::string_view name,
                                  std::string_view arguments, bool first) {
  json chunk = Header(header, true);
  json call = {{"index", call_index}};
  if (!id.empty()) {
    call["id"] = std::string(id);
    call["type"] = "function";
    call["function"] = {{"name", std::string(name)}, {"arguments", std::string(arguments)}};
  } else {
    call["function"] = {{"arguments", std::string(arguments)}};
  }
  json delta = {{"tool_calls", json::array({call})}};
  if (first) delta["role"] = "assistant";
  chunk["choices"] = json::array(
      {{{"index", index}, {"finish_reason", nullptr}, {"logprobs", nullptr}, {"delta", delta}}});
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
