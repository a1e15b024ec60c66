#include "reprise/engine.h"

#include <algorithm>

#include "engine/generator.h"
#include "engine/graph_backend.h"
#include "engine/inference_backend.h"
#include "engine/loaded_model.h"
#include "engine/reference_backend.h"
#include "tokenizer/chat_template.h"

namespace reprise {

Engine::Engine() = default;
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  if (options.model_path.empty()) return InvalidArgumentError("no model file given");
  if (options.context_tokens < 0) return InvalidArgumentError("context size must be >= 0");
  std::unique_ptr<Engine> engine(new Engine());
  REPRISE_ASSIGN_OR_RETURN(engine->model_, engine::LoadedModel::Load(options.model_path));
  const int context = options.context_tokens > 0
                          ? options.context_tokens
                          : std::min(engine->model_->config().context_length, 4096);
  if (options.use_reference) {
    REPRISE_ASSIGN_OR_RETURN(engine->backend_,
                             engine::ReferenceBackend::Create(*engine->model_, context));
  } else {
    engine::GraphBackendOptions graph_options;
    graph_options.context_tokens = context;
    graph_options.num_threads = options.num_threads;
    if (options.prefill_capacity > 0) graph_options.prefill_capacity = options.prefill_capacity;
    REPRISE_ASSIGN_OR_RETURN(engine->backend_,
                             engine::GraphBackend::Create(*engine->model_, graph_options));
  }
  return engine;
}

std::vector<TokenPiece> Engine::Tokenize(std::string_view text, bool add_special,
                                         bool parse_special) const {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  std::vector<TokenPiece> out;
  for (int32_t id : tok.Encode(text, tokenizer::EncodeOptions{add_special, parse_special})) {
    out.push_back(TokenPiece{id, tok.TokenPiece(id)});
  }
  return out;
}

Result<GenerateResult> Engine::Generate(const GenerateRequest& request,
                                        const std::function<bool(std::string_view)>& on_text) {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  GenerateResult result;
  bool is_chat = request.chat || !request.messages.empty();
  if (is_chat) {
    std::vector<tokenizer::ChatMessage> messages;
    for (const ChatTurn& turn : request.messages) messages.push_back({turn.role, turn.content});
    if (messages.empty()) messages.push_back({"user", request.prompt});
    const std::string text = tokenizer::FormatChat(model_->chat_format(), messages, true);
    result.prompt_tokens = tok.Encode(text, tokenizer::EncodeOptions{true, true});
  } else {
    result.prompt_tokens = tok.Encode(request.prompt, tokenizer::EncodeOptions{true, false});
  }
  engine::GenerationOptions options;
  options.max_new_tokens = request.max_new_tokens;
  options.sampling = engine::SamplerOptions{request.temperature, request.top_k, request.top_p,
                                            request.seed};
  // A completion continues the prompt's text, so the first token keeps its leading space.
  options.strip_leading_space = false;
  backend_->Truncate(0);
  auto collect = [&](std::string_view text) {
    result.text.append(text);
    return on_text ? on_text(text) : true;
  };
  REPRISE_ASSIGN_OR_RETURN(engine::GenerationStats stats,
                           engine::Generate(*backend_, tok, result.prompt_tokens, options, collect,
                                            &result.generated_tokens));
  result.ttft_ms = stats.prefill_ms;
  result.decode_tokens_per_second =
      stats.generated_tokens > 1 && stats.decode_ms > 0
          ? (stats.generated_tokens - 1) * 1000.0 / stats.decode_ms
          : 0.0;
  result.stop_reason = stats.stop_reason;
  return result;
}

std::string Engine::Describe() const {
  return model_->config().Summary() + "; backend " + backend_->name() + ", context " +
         std::to_string(backend_->capacity_tokens()) + " tokens";
}

int Engine::context_tokens() const { return backend_->capacity_tokens(); }

}  // namespace reprise
