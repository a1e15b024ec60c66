// libFuzzer target for the server's request parsing: any bytes as the JSON body of
// POST /v1/chat/completions and POST /v1/completions. Properties (a failure traps): never
// crash, never throw; an error is InvalidArgument with a message; an accepted request is
// within the limits (max_tokens, stop sequences, documents), and its response bodies (built
// from an empty result) are valid JSON.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "server/openai_request.h"
#include "server/openai_response.h"

namespace {

using namespace reprise;
using namespace reprise::server;

void Require(bool condition) {
  if (!condition) std::abort();
}

void Check(const Result<ServeRequest>& parsed, const RequestLimits& limits, Endpoint endpoint) {
  if (!parsed.ok()) {
    Require(parsed.error().code() == StatusCode::kInvalidArgument);
    Require(!parsed.error().message().empty());
    return;
  }
  const GenerateRequest& g = parsed->generate;
  Require((g.max_new_tokens >= 1 || parsed->echo) && g.max_new_tokens <= limits.max_tokens);
  Require(g.num_choices >= 1 && g.num_choices <= kMaxChoices);
  Require(g.top_logprobs >= 0 && g.top_logprobs <= 20);
  Require(static_cast<int>(parsed->stop.size()) <= limits.max_stop_sequences);
  Require(static_cast<int>(g.documents.size() + g.skills.size()) <= limits.max_documents);
  Require(g.temperature >= 0.0f && g.temperature <= 2.0f);
  Require(g.top_p > 0.0f && g.top_p <= 1.0f);
  Require(endpoint != Endpoint::kChat || !g.messages.empty());
  GenerateResult result;
  result.text = g.prompt;  // any bytes the request carried
  const ResponseHeader header{endpoint, "id", 0, parsed->model};
  // Logprobs whose token text is the request's bytes, one without a value (NaN).
  PositionLogprobs entry{{1, g.prompt, -0.5f}, {{2, g.prompt, -1.0f}}};
  const ChoiceOutput choice{result.text, "stop", true,
                            {entry, {{3, g.prompt, std::numeric_limits<float>::quiet_NaN()}, {}}}};
  for (const std::string& body :
       {CompletionBody(header, result, {choice, choice}, 0.0),
        StreamChunk(header, 1, result.text, true, "", &choice), UsageChunk(header, result, 0.0)}) {
    Require(nlohmann::json::accept(body));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  limits.max_documents = 16;
  Check(ParseChatCompletionRequest(body, limits), limits, Endpoint::kChat);
  Check(ParseCompletionRequest(body, limits), limits, Endpoint::kCompletion);
  return 0;
}
