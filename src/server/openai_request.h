// Parses and validates the JSON bodies of OpenAI's `POST /v1/chat/completions` and
// `POST /v1/completions` into an engine request.
//
// Strict, as OpenAI's own API is: a body that is not a JSON object, a field of the wrong type
// or out of range, and an unknown field are refused with InvalidArgument naming the field
// (the server answers 400 with OpenAI's error shape). Fields OpenAI defines that Reprise
// cannot honour (penalties, logit_bias, images) are refused the same way rather than
// ignored. `n` (1-16) choices share one prefill; chat `logprobs` + `top_logprobs` (0-20),
// completions `logprobs` (0-20 alternatives) and `echo` (with `max_tokens` 0 allowed, to score
// a text). A body nested deeper than RequestLimits::max_json_depth is refused while it is
// parsed; no client value is copied or serialised past that depth. Reprise's extensions:
//   "documents": [{"id": "...", "text": "..."}]  retrieved documents, each a reusable segment
//   "skills":    [{"id": "...", "text": "..."}]  skill / tool descriptions, the same
//                                                 (id: a non-empty string, the title the
//                                                 model sees; text: non-empty)
//   "top_k": int                                  sampling, as llama.cpp's server takes it
// OpenAI's "tools" are rendered together as one skill (tool selection needs the whole block), in
// the Qwen/Hermes form of server/tool_calls.h; assistant `tool_calls` and `tool` messages are
// rendered back in the same form; tool_choice: "auto", "none", "required" or a named function.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reprise/engine.h"

namespace reprise::server {

struct RequestLimits {
  int default_max_tokens = 256;  // when the request names none
  int max_tokens = 4096;         // the most a request may ask for
  int max_documents = 256;       // documents + skills in one request
  int max_stop_sequences = 4;
  // Levels of arrays and objects a body may nest (the body itself is one). Deeper bodies are
  // refused while they are parsed, before anything follows them.
  int max_json_depth = 64;
};

struct ServeRequest {
  GenerateRequest generate;  // name_space and cancel are the server's to fill in
  std::string model;         // as the request named it ("" = not named)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with `usage`
  std::vector<std::string> stop;
  bool echo = false;  // completions: the prompt's text before each choice's
  // Chat with `tools` (tool_choice not "none"): the functions whose calls are read out of the
  // reply (server/tool_calls.h); tool_choice "required" or named also set generate.json_schema.
  std::vector<std::string> tool_names;
  // The function every reply calls when the request fixes it (tool_choice naming it, or
  // "required" with one function); "" otherwise.
  std::string forced_tool;
};

Result<ServeRequest> ParseChatCompletionRequest(std::string_view body, const RequestLimits& limits);
Result<ServeRequest> ParseCompletionRequest(std::string_view body, const RequestLimits& limits);

}  // namespace reprise::server
