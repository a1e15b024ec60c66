#include "reprise/engine.h"

#include <algorithm>
#include <cstdio>

#include "base/cpu_features.h"
#include "engine/calibration.h"
#include "engine/generator.h"
#include "engine/inference_backend.h"
#include "engine/loaded_model.h"
#include "engine/reference_backend.h"
#include "engine/reuse_session.h"
#include "engine/store_settings.h"
#include "kv/memory_chunk_cache.h"
#include "tokenizer/chat_template.h"

namespace reprise {

Engine::Engine() = default;
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  if (options.model_path.empty()) return InvalidArgumentError("no model file given");
  if (options.context_tokens < 0) return InvalidArgumentError("context size must be >= 0");
  REPRISE_ASSIGN_OR_RETURN(engine::ReuseMethod method, engine::ParseReuseMethod(options.reuse));
  std::unique_ptr<Engine> engine(new Engine());
  REPRISE_ASSIGN_OR_RETURN(engine->model_, engine::LoadedModel::Load(options.model_path));
  const int context = options.context_tokens > 0
                          ? options.context_tokens
                          : std::min(engine->model_->config().context_length, 4096);
  if (options.use_reference) {
    REPRISE_ASSIGN_OR_RETURN(engine->reference_,
                             engine::ReferenceBackend::Create(*engine->model_, context));
    return engine;
  }
  engine::ReuseOptions reuse;
  reuse.method = method;
  reuse.context_tokens = context;
  reuse.num_threads = options.num_threads;
  reuse.recompute_ratio = options.recompute_ratio;
  reuse.guard_deviation = options.quality_guard;
  if (!options.calibration_dir.empty()) {
    const int threads =
        options.num_threads > 0 ? options.num_threads : GetCpuFeatures().num_usable_cores;
    Result<engine::Calibration> calibration = engine::LoadCalibration(
        engine::CalibrationPath(options.calibration_dir, engine->model_->fingerprint(), threads));
    if (calibration.ok()) {
      reuse.prefill_capacity = calibration->prefill_capacity;
      reuse.recompute_capacity = calibration->recompute_capacity;
      reuse.prefill_latency_ms = calibration->PrefillMs(reuse.prefill_capacity);
      reuse.recompute_latency_ms = calibration->RecomputeMs(reuse.recompute_capacity);
    }
  }
  if (options.prefill_capacity > 0) reuse.prefill_capacity = options.prefill_capacity;
  if (options.recompute_capacity > 0) reuse.recompute_capacity = options.recompute_capacity;
  if (method != engine::ReuseMethod::kNone) {
    if (options.cache_mb <= 0) return InvalidArgumentError("cache size must be positive");
    if (!options.store_dir.empty()) {
      engine::StoreSettings settings;
      settings.dir = options.store_dir;
      settings.pool_mb = options.cache_mb;
      settings.disk_mb = options.store_disk_mb;
      settings.codec = options.store_codec;
      settings.recompute_ratio = options.recompute_ratio;
      if (reuse.prefill_latency_ms > 0 && reuse.prefill_capacity > 0) {
        settings.compute_ms_per_token = reuse.prefill_latency_ms / reuse.prefill_capacity;
      }
      REPRISE_ASSIGN_OR_RETURN(engine->store_, engine::OpenChunkStore(*engine->model_, settings));
      engine->cache_ = engine->store_->OpenNamespace(options.name_space);
    } else {
      REPRISE_ASSIGN_OR_RETURN(const int64_t cache_bytes,
                               engine::BudgetMibToBytes(options.cache_mb, "cache size"));
      engine->cache_ = std::make_unique<kv::MemoryChunkCache>(cache_bytes);
    }
  }
  REPRISE_ASSIGN_OR_RETURN(
      engine->session_, engine::ReuseSession::Create(*engine->model_, reuse, engine->cache_.get()));
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

namespace {

// The prompt as segments: given ones, one per chat message (the template's markers parsed
// as special tokens) plus the assistant header, or the plain prompt.
std::vector<engine::PromptSegment> BuildSegments(const GenerateRequest& request,
                                                 tokenizer::ChatFormat format) {
  std::vector<engine::PromptSegment> segments;
  if (!request.segments.empty()) {
    for (const Segment& s : request.segments) segments.push_back({s.role, s.text, false});
    return segments;
  }
  if (request.chat || !request.messages.empty()) {
    std::vector<tokenizer::ChatMessage> messages;
    for (const ChatTurn& turn : request.messages) messages.push_back({turn.role, turn.content});
    if (messages.empty()) messages.push_back({"user", request.prompt});
    for (const tokenizer::ChatMessage& m : messages) {
      segments.push_back({m.role, tokenizer::FormatChat(format, std::span(&m, 1), false), true});
    }
    segments.push_back({"assistant", tokenizer::FormatChat(format, {}, true), true});
    return segments;
  }
  segments.push_back({"prompt", request.prompt, false});
  return segments;
}

}  // namespace

Result<GenerateResult> Engine::Generate(const GenerateRequest& request,
                                        const std::function<bool(std::string_view)>& on_text) {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  GenerateResult result;
  engine::GenerationOptions options;
  options.max_new_tokens = request.max_new_tokens;
  options.sampling =
      engine::SamplerOptions{request.temperature, request.top_k, request.top_p, request.seed};
  // A completion continues the prompt's text, so the first token keeps its leading space.
  options.strip_leading_space = false;
  REPRISE_RETURN_IF_ERROR(engine::Sampler::Create(options.sampling));
  auto collect = [&](std::string_view text) {
    result.text.append(text);
    return on_text ? on_text(text) : true;
  };
  engine::GenerationStats stats;
  const std::vector<engine::PromptSegment> segments = BuildSegments(request, model_->chat_format());
  if (reference_) {
    for (const engine::PromptSegment& s : segments) {
      std::vector<int32_t> ids =
          tok.Encode(s.text, tokenizer::EncodeOptions{false, s.parse_special});
      if (result.prompt_tokens.empty() && tok.vocab().add_bos && tok.bos_id()) {
        result.prompt_tokens.push_back(*tok.bos_id());
      }
      result.prompt_tokens.insert(result.prompt_tokens.end(), ids.begin(), ids.end());
    }
    reference_->Truncate(0);
    REPRISE_ASSIGN_OR_RETURN(stats, engine::Generate(*reference_, tok, result.prompt_tokens,
                                                     options, collect, &result.generated_tokens));
    result.tokens_new = static_cast<int>(result.prompt_tokens.size());
  } else {
    REPRISE_ASSIGN_OR_RETURN(engine::PrefillReport report, session_->Prefill(segments));
    result.prompt_tokens = session_->prompt_tokens();
    stats.prompt_tokens = report.prompt_tokens;
    stats.prefill_ms = report.ttft_ms;
    result.tokens_prefix = report.tokens_prefix;
    result.tokens_reused = report.tokens_nonprefix;
    result.tokens_recomputed = report.tokens_recomputed;
    result.tokens_new = report.tokens_new;
    REPRISE_RETURN_IF_ERROR(engine::GenerateFrom(session_->backend(), tok, session_->logits(),
                                                 options, collect, &result.generated_tokens,
                                                 stats));
    // After the reply: storing chunks is never on the time-to-first-token path (a store
    // only queues them for its write-back thread), then idle work (prefetch).
    REPRISE_RETURN_IF_ERROR(session_->StoreChunks());
    if (cache_) cache_->RunIdleWork();
  }
  result.ttft_ms = stats.prefill_ms;
  result.decode_tokens_per_second = stats.generated_tokens > 1 && stats.decode_ms > 0
                                        ? (stats.generated_tokens - 1) * 1000.0 / stats.decode_ms
                                        : 0.0;
  result.stop_reason = stats.stop_reason;
  return result;
}

std::string Engine::Describe() const {
  if (reference_) {
    return model_->config().Summary() + "; backend " + reference_->name() + ", context " +
           std::to_string(reference_->capacity_tokens()) + " tokens";
  }
  return model_->config().Summary() + "; backend " + session_->backend().name() + ", context " +
         std::to_string(session_->backend().capacity_tokens()) + " tokens, reuse " +
         engine::ReuseMethodName(session_->options().method);
}

std::string Engine::DescribeStore() const {
  if (!store_) return "";
  const store::StoreStats s = store_->Stats();
  char line[512];
  std::snprintf(line, sizeof(line),
                "store %s: %lld chunks, %.1f MiB on disk, %.1f MiB in memory; hits %lld from "
                "memory, %lld from flash; %lld corrupt dropped%s%s",
                store_->options().dir.c_str(), static_cast<long long>(s.chunks),
                s.bytes_on_disk / 1048576.0, s.bytes_in_pool / 1048576.0,
                static_cast<long long>(s.hits_pool), static_cast<long long>(s.hits_flash),
                static_cast<long long>(s.corrupt_dropped),
                s.persistence_enabled ? "" : "; NOT PERSISTING: ", s.persistence_error.c_str());
  return line;
}

int Engine::context_tokens() const {
  return reference_ ? reference_->capacity_tokens() : session_->backend().capacity_tokens();
}

}  // namespace reprise
