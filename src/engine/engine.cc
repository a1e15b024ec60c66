#include "reprise/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <span>
#include <string>

#include "base/logging.h"
#include "base/mutex.h"
#include "engine/calibration.h"
#include "engine/compiled_model.h"
#include "engine/decode_batcher.h"
#include "engine/generator.h"
#include "engine/guard_calibration.h"
#include "engine/inference_backend.h"
#include "engine/loaded_model.h"
#include "engine/recall_probe.h"
#include "engine/reference_backend.h"
#include "engine/request_segments.h"
#include "engine/reuse_session.h"
#include "engine/sample_text.h"
#include "engine/store_settings.h"
#include "engine/token_logprobs.h"
#include "graph/executor.h"
#include "kernels/machine_peak.h"
#include "kernels/packed_matrix.h"
#include "kv/memory_chunk_cache.h"
#include "reuse/reuse_recall_losses.h"
#include "store/namespace_name.h"
#include "store/store_dir.h"
#include "tokenizer/chat_template.h"

namespace reprise {

// The packed format every matrix is forced into, if any.
static std::optional<kernels::PackedFormat> ForcedFormat(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return kernels::PackedFormat::kQ8_0x8;
    case WeightFormat::kQ4_0:
      return kernels::PackedFormat::kQ4_0x8;
    case WeightFormat::kF16:
      return kernels::PackedFormat::kF16x8;
    case WeightFormat::kF32:
      return kernels::PackedFormat::kF32x8;
    case WeightFormat::kAsStored:
      break;
  }
  return std::nullopt;
}

std::string_view SampleText() { return engine::SampleText(); }

// What the sessions share besides the compiled model and the store: the options every session
// is made with, the namespaces' caches and the slots of Engine::Generate.
struct Engine::Shared {
  engine::ReuseOptions reuse;
  // The quality guard asked for (EngineOptions::quality_guard), and the threshold it came to
  // for blend sessions of an engine whose own method is not blend (resolved at the first).
  double requested_guard = kQualityGuardCalibrated;
  Mutex mutex;
  std::optional<double> blend_session_guard REPRISE_GUARDED_BY(mutex);
  std::string guard_dir;  // where guard thresholds are kept; empty = this process only
  // Namespace -> its cache (a view of the store, or a memory cache of its own).
  std::map<std::string, std::unique_ptr<kv::ChunkCache>> caches REPRISE_GUARDED_BY(mutex);
  CondVar slot_freed;
  // Slots not running a request.
  std::vector<std::unique_ptr<Session>> idle_slots REPRISE_GUARDED_BY(mutex);
  int slots REPRISE_GUARDED_BY(mutex) = 0;    // slots made so far
  int waiting REPRISE_GUARDED_BY(mutex) = 0;  // Generate calls waiting for a slot
  // Batches the decode steps of the sessions generating at once; null = not batched.
  std::unique_ptr<engine::DecodeBatcher> decode_batcher;
  // Constrained decoding's token trie, built by the first request with a schema.
  std::once_flag token_trie_once;
  std::unique_ptr<const engine::TokenTrie> token_trie;
};

Session::Session(Engine& engine, std::string name_space, ReuseMethod reuse)
    : engine_(&engine), name_space_(std::move(name_space)), reuse_method_(reuse) {}
Session::~Session() = default;

// A ChoiceTextCallback for a request's text stream (choices after the first are not
// streamed through a plain TextCallback).
static ChoiceTextCallback FirstChoiceOnly(const TextCallback& on_text) {
  if (!on_text) return {};
  return [&on_text](int choice, std::string_view text) { return choice != 0 || on_text(text); };
}

Result<GenerateResult> Session::Generate(const GenerateRequest& request,
                                         const TextCallback& on_text) {
  return engine_->Run(*this, request, FirstChoiceOnly(on_text));
}

// The backend this session computes on: the compiled graphs of its reuse session, or its own
// reference forward pass.
static engine::InferenceBackend& BackendOf(engine::ReuseSession* reuse,
                                           engine::InferenceBackend* reference) {
  return reuse != nullptr ? static_cast<engine::InferenceBackend&>(reuse->backend()) : *reference;
}

Result<const float*> Session::Evaluate(const int32_t* token_ids, size_t num_tokens,
                                       OpProfile* profile) {
  engine::InferenceBackend& backend = BackendOf(reuse_.get(), reference_.get());
  if (num_tokens == 0 || token_ids == nullptr) return InvalidArgumentError("no tokens to evaluate");
  const std::span<const int32_t> tokens(token_ids, num_tokens);
  const int vocab = engine_->vocab_size();
  for (const int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      return InvalidArgumentError("token id " + std::to_string(t) + " is outside the " +
                                  std::to_string(vocab) + "-token vocabulary");
    }
  }
  if (backend.num_tokens() + static_cast<int64_t>(tokens.size()) > backend.capacity_tokens()) {
    return InvalidArgumentError(std::to_string(tokens.size()) + " more tokens do not fit in the " +
                                std::to_string(backend.capacity_tokens()) + "-token context (" +
                                std::to_string(backend.num_tokens()) + " used)");
  }
  graph::OpTimes times;
  const bool timed = profile != nullptr && reuse_ != nullptr;
  if (timed) reuse_->backend().set_op_times(&times);
  Result<std::span<const float>> logits = backend.Append(tokens);
  if (timed) {
    reuse_->backend().set_op_times(nullptr);
    profile->matmul_ms += times.matmul_ms;
    profile->attention_ms += times.attention_ms;
    profile->other_ms += times.other_ms;
    profile->matmul_macs += times.matmul_macs;
    profile->matmul_int8_ms += times.matmul_int8_ms;
    profile->matmul_int8_macs += times.matmul_int8_macs;
  }
  if (!logits.ok()) return logits.error();
  return logits->data();
}

int Session::num_tokens() const { return BackendOf(reuse_.get(), reference_.get()).num_tokens(); }

Status Session::Truncate(int num_tokens) {
  engine::InferenceBackend& backend = BackendOf(reuse_.get(), reference_.get());
  if (num_tokens < 0 || num_tokens > backend.num_tokens()) {
    return InvalidArgumentError("cannot truncate a " + std::to_string(backend.num_tokens()) +
                                "-token sequence to " + std::to_string(num_tokens) + " tokens");
  }
  backend.Truncate(num_tokens);
  return Status::Ok();
}

Engine::Engine() : shared_(std::make_unique<Shared>()) {}
Engine::~Engine() {
  // Sessions first (they use the caches), then the caches (views of the store), the store.
  shared_->idle_slots.clear();
  shared_->caches.clear();
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  if (options.model_path.empty()) return InvalidArgumentError("no model file given");
  if (options.context_tokens < 0) return InvalidArgumentError("context size must be >= 0");
  if (options.sessions < 1 || options.sessions > 256) {
    return InvalidArgumentError("sessions must be in [1, 256]");
  }
  if (options.out_of_order_groups < 0 || options.out_of_order_groups > 64 ||
      options.out_of_order_window < 1 || options.out_of_order_window > 64) {
    return InvalidArgumentError("out-of-order: 0-64 worker groups and a window of 1-64 calls");
  }
  if (!(options.outlier_fraction >= 0.0 && options.outlier_fraction <= 0.5)) {
    return InvalidArgumentError("outlier fraction must be in [0, 0.5]");
  }
  REPRISE_RETURN_IF_ERROR(store::ValidateNamespaceName(options.name_space));
  std::unique_ptr<Engine> engine(new Engine());
  engine->options_ = options;
  const std::string& calibration_dir = options.calibration_dir;
  REPRISE_ASSIGN_OR_RETURN(engine->model_, engine::LoadedModel::Load(options.model_path));
  engine->context_tokens_ = options.context_tokens > 0
                                ? options.context_tokens
                                : std::min(engine->model_->config().context_length, 4096);
  if (options.use_reference) {
    engine->options_.sessions = 1;
    engine->options_.reuse = ReuseMethod::kNone;
  } else {
    engine::ReuseOptions& reuse = engine->shared_->reuse;
    reuse.method = options.reuse;
    reuse.context_tokens = engine->context_tokens_;
    reuse.num_threads = options.num_threads;
    reuse.recompute_ratio = options.recompute_ratio;
    reuse.guard_deviation = options.quality_guard;
    engine->shared_->requested_guard = options.quality_guard;
    reuse.recompute_min_deviation = options.recompute_min_deviation;
    reuse.stable_min_deviation = options.stable_recompute_min_deviation;
    reuse.selection = options.token_selection;
    const model::ModelConfig& config = engine->model_->config();
    if (reuse.selection != TokenSelection::kDeviation &&
        config.num_heads / config.num_kv_heads > graph::kMaxProbeGroup) {
      // The query probe's attention kernel holds at most kMaxProbeGroup query heads per kv head.
      REPRISE_LOG(kWarning) << "token selection " << TokenSelectionName(options.token_selection)
                            << ": this model's " << config.num_heads / config.num_kv_heads
                            << " query heads per kv head exceed the query probe's "
                            << graph::kMaxProbeGroup << "; selecting by deviation";
      reuse.selection = TokenSelection::kDeviation;
    }
    reuse.static_shapes = options.static_shapes;
    reuse.out_of_order_groups = options.out_of_order_groups;
    reuse.out_of_order_window = options.out_of_order_window;
    const ReuseTuning& tuning = options.tuning;
    reuse.chunk_tokens = tuning.chunk_tokens;
    reuse.chunking = tuning.chunking;
    reuse.check_layer = tuning.check_layer;
    reuse.deviation_includes_v = tuning.deviation_includes_v;
    reuse.refresh_check_layer = tuning.refresh_check_layer;
    reuse.force_first_tokens = tuning.force_first_tokens;
    reuse.query_probe_tokens = tuning.query_probe_tokens;
    reuse.stable_context_tokens = tuning.stable_context_tokens;
    reuse.stable_repair_tokens = tuning.stable_repair_tokens;
    reuse.min_match_tokens = tuning.min_match_tokens;
    reuse.max_candidates = tuning.max_candidates;
    reuse.overlap_kv_preparation = tuning.overlap_kv_preparation;
    reuse.shard_pipeline = tuning.shard_pipeline;
    reuse.scheduler = tuning.scheduler;
    engine->is_calibrated_ =
        engine::ApplyCalibration(calibration_dir, engine->model_->fingerprint(), &reuse);
    if (options.prefill_capacity > 0) reuse.prefill_capacity = options.prefill_capacity;
    if (options.recompute_capacity > 0) reuse.recompute_capacity = options.recompute_capacity;
    engine::CompiledModelOptions compiled;
    compiled.num_threads = options.num_threads;
    compiled.pack.static_int8 =
        engine::StaticInt8For(options.int8_scheme, options.outlier_fraction);
    compiled.pack.force_format = ForcedFormat(options.weight_format);
    compiled.calibration_dir = calibration_dir;
    REPRISE_ASSIGN_OR_RETURN(engine->compiled_,
                             engine::CompiledModel::Create(*engine->model_, compiled));
    reuse.compiled = engine->compiled_;
    if (options.batch_decode && options.sessions > 1) {
      REPRISE_ASSIGN_OR_RETURN(
          engine->shared_->decode_batcher,
          engine::DecodeBatcher::Create(
              engine->compiled_, std::min(options.sessions, engine::DecodeBatcher::kMaxBatch)));
      reuse.decode_batcher = engine->shared_->decode_batcher.get();
    }
    if (options.reuse != ReuseMethod::kNone) {
      if (options.cache_mb <= 0) return InvalidArgumentError("cache size must be positive");
      REPRISE_RETURN_IF_ERROR(engine::BudgetMibToBytes(options.cache_mb, "cache size"));
      if (!options.store_remote.empty() && options.store_dir.empty()) {
        return InvalidArgumentError("a remote tier needs a store folder (store_dir, --store-dir)");
      }
      if (!options.store_dir.empty()) {
        engine::StoreSettings settings;
        settings.dir = options.store_dir;
        settings.pool_mb = options.cache_mb;
        settings.disk_mb = options.store_disk_mb;
        settings.codec = options.store_codec;
        settings.admit_after = options.store_admit_after;
        settings.remote.url = options.store_remote;
        settings.remote.password = options.store_remote_password;
        settings.remote.timeout_ms = options.store_remote_timeout_ms;
        settings.remote.ttl_seconds = options.store_remote_ttl_s;
        settings.cost_aware = options.tuning.store_cost_aware_eviction;
        settings.prefetch = options.tuning.store_prefetch;
        settings.recompute_ratio = options.recompute_ratio;
        settings.compute_ms_per_token = engine::ComputeMsPerToken(reuse);
        REPRISE_ASSIGN_OR_RETURN(
            engine->store_,
            engine::OpenChunkStore(*engine->model_, engine->compiled_->kv_fingerprint(), settings));
      }
    }
    // The guard's threshold, measured on the arithmetic the sessions compute with, is kept in
    // the calibration folder, else beside the persistent store the app gave (measured once,
    // not at every load), else for this process.
    engine->shared_->guard_dir = !calibration_dir.empty() ? calibration_dir
                                 : engine->store_         ? options.store_dir + "/calibrations"
                                                          : std::string();
    if (reuse.method == ReuseMethod::kBlend) {
      REPRISE_RETURN_IF_ERROR(
          engine::ResolveQualityGuard(*engine->model_, engine->shared_->guard_dir, &reuse));
    } else {
      reuse.guard_deviation = 0.0;
    }
  }
  // The first slot now: it compiles the graphs and checks the options.
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Session> first, engine->NewSession(options.name_space));
  engine->backend_name_ = BackendOf(first->reuse_.get(), first->reference_.get()).name();
  if (first->reference_) {
    engine->description_ = engine->model_->config().Summary() + "; backend " +
                           first->reference_->name() + ", context " +
                           std::to_string(engine->context_tokens_) + " tokens";
  } else {
    engine->description_ = engine->model_->config().Summary() + "; backend " +
                           first->reuse_->backend().name() + ", context " +
                           std::to_string(engine->context_tokens_) + " tokens, reuse " +
                           ReuseMethodName(options.reuse);
  }
  {
    MutexLock lock(engine->shared_->mutex);
    engine->shared_->slots = 1;
    engine->shared_->idle_slots.push_back(std::move(first));
  }
  return engine;
}

Result<kv::ChunkCache*> Engine::CacheOf(const std::string& name_space) {
  if (options_.reuse == ReuseMethod::kNone) return nullptr;
  MutexLock lock(shared_->mutex);
  auto it = shared_->caches.find(name_space);
  if (it != shared_->caches.end()) return it->second.get();
  REPRISE_RETURN_IF_ERROR(store::ValidateNamespaceName(name_space));
  std::unique_ptr<kv::ChunkCache> cache;
  if (store_) {
    REPRISE_ASSIGN_OR_RETURN(cache, store_->OpenValidNamespace(name_space));
  } else {
    REPRISE_ASSIGN_OR_RETURN(const int64_t bytes,
                             engine::BudgetMibToBytes(options_.cache_mb, "cache size"));
    cache = std::make_unique<kv::MemoryChunkCache>(bytes);
  }
  kv::ChunkCache* raw = cache.get();
  shared_->caches.emplace(name_space, std::move(cache));
  return raw;
}

Result<std::unique_ptr<Session>> Engine::NewSession(std::string name_space,
                                                    std::optional<ReuseMethod> reuse) {
  if (name_space.empty()) name_space = options_.name_space;
  REPRISE_RETURN_IF_ERROR(store::ValidateNamespaceName(name_space));
  const ReuseMethod method = reuse.value_or(options_.reuse);
  if (method != ReuseMethod::kNone && options_.reuse == ReuseMethod::kNone) {
    return InvalidArgumentError(std::string("a session cannot reuse (") + ReuseMethodName(method) +
                                ") on an engine made without reuse (none): it has no caches");
  }
  std::unique_ptr<Session> session(new Session(*this, name_space, method));
  if (options_.use_reference) {
    REPRISE_ASSIGN_OR_RETURN(session->reference_,
                             engine::ReferenceBackend::Create(*model_, context_tokens_));
    return session;
  }
  engine::ReuseOptions options = shared_->reuse;
  options.method = method;
  if (method == ReuseMethod::kBlend && options_.reuse != ReuseMethod::kBlend) {
    // The engine resolved no guard for its own method: resolve it once for blend sessions.
    MutexLock lock(shared_->mutex);
    if (!shared_->blend_session_guard) {
      engine::ReuseOptions guarded = options;
      guarded.guard_deviation = shared_->requested_guard;
      REPRISE_RETURN_IF_ERROR(engine::ResolveQualityGuard(*model_, shared_->guard_dir, &guarded));
      shared_->blend_session_guard = guarded.guard_deviation;
    }
    options.guard_deviation = *shared_->blend_session_guard;
  }
  kv::ChunkCache* cache = nullptr;
  if (method != ReuseMethod::kNone) {
    REPRISE_ASSIGN_OR_RETURN(cache, CacheOf(name_space));
  }
  REPRISE_ASSIGN_OR_RETURN(session->reuse_, engine::ReuseSession::Create(*model_, options, cache));
  return session;
}

Result<std::unique_ptr<Session>> Engine::OpenSession(const SessionOptions& options) {
  return NewSession(options.name_space, options.reuse);
}

Status Engine::Flush() { return store_ ? store_->Flush() : Status::Ok(); }

Status Engine::DropStoreFromPageCache() {
  if (!store_) return Status::Ok();
  REPRISE_RETURN_IF_ERROR(store_->Flush());
  return store::DropKvFilePages(options_.store_dir).status();
}

Result<NamespaceStats> Engine::StatsOf(const std::string& name_space) {
  if (options_.reuse == ReuseMethod::kNone) {
    return InvalidArgumentError("an engine made without reuse (none) has no caches");
  }
  REPRISE_ASSIGN_OR_RETURN(kv::ChunkCache * cache, CacheOf(name_space));
  const kv::ChunkCacheStats s = cache->stats();
  NamespaceStats stats;
  stats.chunks = s.num_chunks;
  stats.bytes = s.bytes;
  stats.evictions = s.evictions;
  stats.hits_memory = s.hits_pool;
  stats.hits_flash = s.hits_flash;
  return stats;
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
                                        const TextCallback& on_text) {
  return GenerateChoices(request, FirstChoiceOnly(on_text));
}

Result<GenerateResult> Engine::GenerateChoices(const GenerateRequest& request,
                                               const ChoiceTextCallback& on_text) {
  // Take a free slot, making one when fewer than `sessions` exist, else wait for one.
  std::unique_ptr<Session> slot;
  {
    MutexLock lock(shared_->mutex);
    ++shared_->waiting;
    while (shared_->idle_slots.empty() && shared_->slots >= options_.sessions) {
      shared_->slot_freed.Wait(lock);
    }
    --shared_->waiting;
    if (!shared_->idle_slots.empty()) {
      slot = std::move(shared_->idle_slots.back());
      shared_->idle_slots.pop_back();
    } else {
      ++shared_->slots;  // reserved; made below, outside the lock
    }
  }
  if (!slot) {
    Result<std::unique_ptr<Session>> made = NewSession(options_.name_space);
    if (!made.ok()) {
      MutexLock lock(shared_->mutex);
      --shared_->slots;
      shared_->slot_freed.NotifyOne();
      return made.error();
    }
    slot = std::move(made).value();
  }
  Result<GenerateResult> result = Run(*slot, request, on_text);
  {
    MutexLock lock(shared_->mutex);
    shared_->idle_slots.push_back(std::move(slot));
  }
  shared_->slot_freed.NotifyOne();
  return result;
}

// The [begin, end) runs of tokens the plan took from the cache (prefix or not).
static std::vector<std::pair<int, int>> FoundRuns(std::span<const reuse::TokenKind> kinds) {
  std::vector<std::pair<int, int>> runs;
  for (int i = 0; i < static_cast<int>(kinds.size()); ++i) {
    if (kinds[static_cast<size_t>(i)] == reuse::TokenKind::kNew) continue;
    if (!runs.empty() && runs.back().second == i) {
      ++runs.back().second;
    } else {
      runs.emplace_back(i, i + 1);
    }
  }
  return runs;
}

// Scores every prompt token after the first (GenerateRequest::return_prompt_logprobs): runs
// the prompt again one token at a time from the start, so that the backend ends holding the
// whole prompt, with its last logits those after the prompt. Returns those logits.
static Result<std::span<const float>> ScorePrompt(engine::InferenceBackend& backend,
                                                  const tokenizer::Tokenizer& tok,
                                                  std::span<const int32_t> prompt, int num_top,
                                                  std::vector<PositionLogprobs>& out) {
  engine::LogprobScorer scorer(tok, num_top);
  if (!prompt.empty()) {
    PositionLogprobs first;
    first.token =
        TokenLogprob{prompt[0], tok.TokenPiece(prompt[0]), std::numeric_limits<float>::quiet_NaN()};
    out.push_back(std::move(first));
  }
  backend.Truncate(0);
  std::span<const float> logits;
  for (size_t i = 0; i < prompt.size(); ++i) {
    REPRISE_ASSIGN_OR_RETURN(logits, backend.Append(prompt.subspan(i, 1)));
    if (i + 1 < prompt.size()) out.push_back(scorer.Score(logits, prompt[i + 1]));
  }
  return logits;
}

Result<GenerateResult> Engine::Run(Session& session, const GenerateRequest& request,
                                   const ChoiceTextCallback& on_text, engine::RecallProbe* probe) {
  const tokenizer::Tokenizer& tok = model_->tokenizer();
  GenerateResult result;
  result.name_space = request.name_space.empty() ? session.name_space() : request.name_space;
  engine::GenerationOptions options;
  options.max_new_tokens = request.max_new_tokens;
  options.sampling =
      engine::SamplerOptions{request.temperature, request.top_k, request.top_p, request.seed};
  options.cancel = request.cancel;
  options.stop_at_end_of_generation = !request.ignore_eos;
  // A completion continues the prompt's text, so the first token keeps its leading space; a
  // chat reply is a message of its own (sent back as such in the next turn), so it does not.
  options.strip_leading_space = engine::IsChatRequest(request);
  options.return_logprobs = request.return_logprobs;
  options.top_logprobs = request.top_logprobs;
  REPRISE_RETURN_IF_ERROR(engine::Sampler::Create(options.sampling));
  if (request.top_logprobs < 0 || request.top_logprobs > engine::kMaxTopLogprobs) {
    return InvalidArgumentError("top_logprobs must be in [0, " +
                                std::to_string(engine::kMaxTopLogprobs) + "], not " +
                                std::to_string(request.top_logprobs));
  }
  if (request.num_choices < 1 || request.num_choices > kMaxChoices) {
    return InvalidArgumentError("num_choices must be in [1, " + std::to_string(kMaxChoices) +
                                "], not " + std::to_string(request.num_choices));
  }
  if (request.max_prompt_tokens < 0) {
    return InvalidArgumentError("max_prompt_tokens must be >= 0 (0 = the context's limit), not " +
                                std::to_string(request.max_prompt_tokens));
  }
  std::unique_ptr<engine::JsonConstraint> constraint;
  if (!request.json_schema.empty()) {
    Result<engine::JsonSchema> schema = engine::JsonSchema::Parse(request.json_schema);
    if (!schema.ok()) {
      return InvalidArgumentError("the JSON schema: " + std::string(schema.error().message()));
    }
    std::call_once(shared_->token_trie_once,
                   [&] { shared_->token_trie = std::make_unique<const engine::TokenTrie>(tok); });
    constraint =
        std::make_unique<engine::JsonConstraint>(std::move(schema).value(), *shared_->token_trie);
    options.constraint = constraint.get();
  }
  if (request.cancel != nullptr && request.cancel->load()) {
    return CancelledError("the request was cancelled");
  }
  auto collect = [&](std::string_view text) {
    result.text.append(text);
    return on_text ? on_text(0, text) : true;
  };
  // Choices after the first, from the prompt's KV (num_tokens of them in `backend`) and the
  // logits after it.
  auto generate_more_choices = [&](engine::InferenceBackend& backend, int prompt_kv_tokens,
                                   std::span<const float> prompt_logits) -> Status {
    for (int c = 1; c < request.num_choices; ++c) {
      GeneratedChoice& choice = result.more_choices.emplace_back();
      backend.Truncate(prompt_kv_tokens);
      if (constraint) constraint->Reset();
      engine::GenerationOptions choice_options = options;
      choice_options.sampling.seed = request.seed + static_cast<uint64_t>(c);
      engine::GenerationStats choice_stats;
      auto collect_choice = [&](std::string_view text) {
        choice.text.append(text);
        return on_text ? on_text(c, text) : true;
      };
      REPRISE_RETURN_IF_ERROR(engine::GenerateFrom(backend, tok, prompt_logits, choice_options,
                                                   collect_choice, &choice.generated_tokens,
                                                   choice_stats, &choice.logprobs));
      choice.stop_reason = choice_stats.stop_reason;
    }
    return Status::Ok();
  };
  engine::GenerationStats stats;
  const std::vector<engine::PromptSegment> segments =
      engine::BuildRequestSegments(request, model_->chat_format());
  // An empty prompt generates from BOS alone (a base model's unconditional text), as
  // llama.cpp allows; a model without BOS has nothing to start from.
  if (std::all_of(segments.begin(), segments.end(),
                  [](const engine::PromptSegment& s) { return s.text.empty(); }) &&
      !(tok.vocab().add_bos && tok.bos_id())) {
    return InvalidArgumentError(
        "the prompt is empty and this model adds no BOS token to start from");
  }
  if (session.reference_) {
    engine::InferenceBackend& reference = *session.reference_;
    for (const engine::PromptSegment& s : segments) {
      std::vector<int32_t> ids = tok.Encode(s.text, engine::SegmentEncodeOptions(s));
      if (result.prompt_tokens.empty() && tok.vocab().add_bos && tok.bos_id()) {
        result.prompt_tokens.push_back(*tok.bos_id());
      }
      result.prompt_tokens.insert(result.prompt_tokens.end(), ids.begin(), ids.end());
    }
    if (request.max_prompt_tokens > 0 &&
        static_cast<int>(result.prompt_tokens.size()) > request.max_prompt_tokens) {
      return InvalidArgumentError("the prompt has " + std::to_string(result.prompt_tokens.size()) +
                                  " tokens, more than max_prompt_tokens (" +
                                  std::to_string(request.max_prompt_tokens) + ")");
    }
    reference.Truncate(0);
    const int free_tokens = reference.capacity_tokens();
    if (static_cast<int64_t>(result.prompt_tokens.size()) > free_tokens) {
      return InvalidArgumentError("the prompt has " + std::to_string(result.prompt_tokens.size()) +
                                  " tokens but only " + std::to_string(free_tokens) +
                                  " fit in the context; shorten it or raise the context size");
    }
    if (result.prompt_tokens.empty()) return InvalidArgumentError("the prompt is empty");
    const auto start = std::chrono::steady_clock::now();
    std::span<const float> logits;
    if (request.return_prompt_logprobs) {
      REPRISE_ASSIGN_OR_RETURN(logits, ScorePrompt(reference, tok, result.prompt_tokens,
                                                   request.top_logprobs, result.prompt_logprobs));
    } else {
      REPRISE_ASSIGN_OR_RETURN(logits, reference.Append(result.prompt_tokens));
    }
    stats.prompt_tokens = static_cast<int>(result.prompt_tokens.size());
    stats.prefill_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The logits outlive the first choice's decode steps only as a copy.
    const std::vector<float> prompt_logits(logits.begin(), logits.end());
    REPRISE_RETURN_IF_ERROR(engine::GenerateFrom(reference, tok, prompt_logits, options, collect,
                                                 &result.generated_tokens, stats,
                                                 &result.logprobs));
    REPRISE_RETURN_IF_ERROR(generate_more_choices(
        reference, static_cast<int>(result.prompt_tokens.size()), prompt_logits));
    result.reuse.tokens_new = static_cast<int>(result.prompt_tokens.size());
  } else {
    engine::ReuseSession& reuse = *session.reuse_;
    kv::ChunkCache* cache = nullptr;
    if (session.reuse() != ReuseMethod::kNone) {
      REPRISE_ASSIGN_OR_RETURN(cache, CacheOf(result.name_space));
    }
    reuse.set_cache(cache);
    reuse.set_cancel(request.cancel);
    Result<engine::PrefillResult> prefilled = reuse.Prefill(segments, request.max_prompt_tokens);
    reuse.set_cancel(nullptr);
    if (!prefilled.ok()) return prefilled.error();
    const engine::PrefillResult& prefill = *prefilled;
    const engine::PrefillReport* report = &prefill.report;
    result.reuse.chunks_from_memory = report->chunks_from_memory;
    result.reuse.chunks_from_flash = report->chunks_from_flash;
    result.prompt_tokens = prefill.prompt;
    stats.prompt_tokens = report->prompt_tokens;
    stats.prefill_ms = report->ttft_ms;
    result.reuse.tokens_prefix = report->tokens_prefix;
    result.reuse.tokens_prefix_inexact = report->tokens_prefix_inexact;
    result.reuse.tokens_reused = report->tokens_nonprefix;
    result.reuse.tokens_recomputed = report->tokens_recomputed;
    result.reuse.tokens_stable = report->tokens_stable - report->tokens_repaired;
    result.reuse.tokens_new = report->tokens_new;
    result.reuse.match_ms = report->match_ms;
    result.reuse.kv_prep_ms = report->kv_prep_ms;
    result.reuse.compute_ms = report->compute_ms;
    result.reuse.guard_fallbacks = report->guard_fallbacks;
    result.reuse.found_runs = FoundRuns(prefill.planned_kinds);
    if (request.return_first_token_logits) {
      result.first_token_logits.assign(reuse.logits().begin(), reuse.logits().end());
    }
    if (request.diagnose) {
      ReuseDiagnostics& d = result.diagnostics;
      d.plan = report->plan;
      d.schedule = report->schedule;
      d.graph_calls = report->graph_calls;
      d.max_residual_deviation = report->max_residual_deviation;
      d.kv_place_ms = report->kv_place_ms;
      d.kv_load_wait_ms = report->kv_load_wait_ms;
      for (const reuse::PromptChunk& c : prefill.chunks)
        d.chunks.emplace_back(c.begin, c.end);
    }
    if (probe != nullptr && cache != nullptr) {
      // Against the cache as the prompt was planned against: before its chunks go in.
      REPRISE_ASSIGN_OR_RETURN(
          probe->losses,
          reuse::ClassifyRecallLosses(
              {result.prompt_tokens, prefill.planned_kinds, prefill.chunks, probe->reusable,
               probe->window, reuse.options().max_candidates, probe->within_chunk},
              *cache));
      probe->classified = true;
    }
    {
      // While it generates, the session's decode steps are batched with the others'.
      const engine::DecodeBatcher::Participant decoding(shared_->decode_batcher.get());
      std::span<const float> logits = reuse.logits();
      if (request.return_prompt_logprobs) {
        REPRISE_ASSIGN_OR_RETURN(logits, ScorePrompt(reuse.backend(), tok, result.prompt_tokens,
                                                     request.top_logprobs, result.prompt_logprobs));
      }
      const int prompt_kv_tokens = reuse.backend().num_tokens();
      std::vector<float> prompt_logits;  // kept for the later choices only
      if (request.num_choices > 1) prompt_logits.assign(logits.begin(), logits.end());
      REPRISE_RETURN_IF_ERROR(engine::GenerateFrom(reuse.backend(), tok, logits, options, collect,
                                                   &result.generated_tokens, stats,
                                                   &result.logprobs));
      REPRISE_RETURN_IF_ERROR(
          generate_more_choices(reuse.backend(), prompt_kv_tokens, prompt_logits));
    }
    // After the reply: storing chunks is never on the time-to-first-token path (a store
    // only queues them for its write-back thread), then idle work (prefetch).
    const bool keep = cache != nullptr && request.keep_kv;
    if (keep) {
      REPRISE_ASSIGN_OR_RETURN(const double store_ms, reuse.StoreChunks(prefill));
      result.diagnostics.store_ms = request.diagnose ? store_ms : 0.0;
    }
    // With several choices the KV after the prompt is the last choice's: no reply is kept.
    if (keep && engine::IsChatRequest(request) && stats.stop_reason != "cancelled" &&
        request.num_choices == 1) {
      // The reply as the next turn will hold it: its KV is kept too, so that the next turn
      // reuses the whole conversation. A failure here loses only that reuse.
      const tokenizer::ChatMessage reply{"assistant", result.text};
      const engine::PromptSegment segment = engine::ChatMessagesSegment(
          "assistant", model_->chat_format(), std::span(&reply, 1), false);
      Result<int> stored = reuse.StoreReply(prefill, segment, result.generated_tokens);
      if (!stored.ok()) {
        REPRISE_LOG(kWarning) << "the reply's KV was not kept: " << stored.error().ToString();
      }
    }
    if (cache) cache->RunIdleWork();
  }
  result.prompt_bos_tokens = !result.prompt_tokens.empty() && tok.vocab().add_bos && tok.bos_id() &&
                                     result.prompt_tokens[0] == *tok.bos_id()
                                 ? 1
                                 : 0;
  result.ttft_ms = stats.prefill_ms;
  result.decode_tokens_per_second = stats.generated_tokens > 1 && stats.decode_ms > 0
                                        ? (stats.generated_tokens - 1) * 1000.0 / stats.decode_ms
                                        : 0.0;
  result.stop_reason = stats.stop_reason;
  return result;
}

int Engine::vocab_size() const { return model_->config().vocab_size; }

std::string Engine::Describe() const { return description_; }

int Engine::prefill_capacity() const { return shared_->reuse.prefill_capacity; }
int Engine::recompute_capacity() const { return shared_->reuse.recompute_capacity; }

double Engine::quality_guard() const {
  if (options_.reuse == ReuseMethod::kBlend) return shared_->reuse.guard_deviation;
  MutexLock lock(shared_->mutex);
  return shared_->blend_session_guard.value_or(0.0);
}

int64_t Engine::kv_bytes_per_token() const {
  const model::ModelConfig& c = model_->config();
  return int64_t{2} * c.num_layers * c.num_kv_heads * c.head_dim * 2;
}

int Engine::num_threads() const { return compiled_ ? compiled_->pool().num_threads() : 1; }

MachinePeak Engine::MeasureMachinePeak(double seconds) const {
  const kernels::KernelSet& set = compiled_ ? compiled_->kernels() : kernels::BestKernels();
  const kernels::MachinePeak measured = kernels::MeasureMachinePeak(set, num_threads(), seconds);
  MachinePeak peak;
  peak.kernels = measured.kernels;
  peak.threads = measured.threads;
  peak.int8_instruction = measured.int8_instruction;
  peak.int8_gmacs_per_second = measured.int8_gmacs_per_second;
  peak.float_instruction = measured.float_instruction;
  peak.float_gmacs_per_second = measured.float_gmacs_per_second;
  peak.read_gb_per_second = measured.read_gb_per_second;
  return peak;
}

EngineStats Engine::Stats() const {
  EngineStats stats;
  MutexLock lock(shared_->mutex);
  stats.sessions = shared_->slots;
  stats.sessions_busy = shared_->slots - static_cast<int>(shared_->idle_slots.size());
  stats.waiting = shared_->waiting;
  if (compiled_) stats.weights_bytes = compiled_->weights().packed_bytes();
  if (shared_->decode_batcher) {
    const engine::DecodeBatcherStats batches = shared_->decode_batcher->stats();
    stats.decode_batch_calls = batches.steps;
    stats.decode_batch_steps = batches.rows;
  }
  if (store_) {
    const store::StoreStats s = store_->Stats();
    stats.chunks = s.chunks;
    stats.bytes_in_memory = s.bytes_in_pool;
    stats.bytes_on_disk = s.bytes_on_disk;
    stats.hits_memory = s.hits_pool;
    stats.hits_flash = s.hits_flash;
    stats.evictions = s.pool_evictions + s.flash_evictions;
    stats.pool_evictions = s.pool_evictions;
    stats.flash_evictions = s.flash_evictions;
    stats.chunks_written = s.chunks_written;
    stats.write_ms_total = s.write_ms_total;
    stats.write_ms_on_caller = s.write_ms_on_caller;
    stats.prefetched = s.prefetched;
    stats.corrupt_dropped = s.corrupt_dropped;
    stats.admitted_on_recurrence = s.admitted_on_recurrence;
    stats.dropped_unadmitted = s.dropped_unadmitted;
    stats.chunks_awaiting_admission = s.chunks_awaiting_admission;
    stats.persisting = s.persistence_enabled;
    stats.persistence_error = s.persistence_error;
    stats.remote_server = s.remote_server;
    stats.remote_hits = s.remote_hits;
    stats.remote_misses = s.remote_misses;
    stats.remote_bad_values = s.remote_bad_values;
    stats.remote_unavailable = s.remote_unavailable;
    stats.remote_chunks_sent = s.remote_chunks_sent;
    stats.remote_bytes_read = s.remote_bytes_read;
    stats.remote_bytes_written = s.remote_bytes_written;
    return stats;
  }
  for (const auto& [name, cache] : shared_->caches) {
    if (!cache) continue;
    const kv::ChunkCacheStats s = cache->stats();
    stats.chunks += s.num_chunks;
    stats.bytes_in_memory += s.bytes;
    stats.hits_memory += s.hits_pool;
    stats.evictions += s.evictions;
  }
  return stats;
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
  std::string out = line;
  if (!s.remote_server.empty()) {
    std::snprintf(line, sizeof(line),
                  "; remote %s: %lld hits, %lld misses, %lld bad values, %lld unavailable, "
                  "%lld chunks sent, %.1f MiB read, %.1f MiB written",
                  s.remote_server.c_str(), static_cast<long long>(s.remote_hits),
                  static_cast<long long>(s.remote_misses),
                  static_cast<long long>(s.remote_bad_values),
                  static_cast<long long>(s.remote_unavailable),
                  static_cast<long long>(s.remote_chunks_sent), s.remote_bytes_read / 1048576.0,
                  s.remote_bytes_written / 1048576.0);
    out += line;
  }
  return out;
}

namespace engine {

Result<GenerateResult> RecallProbe::Generate(Session& session, const GenerateRequest& request) {
  losses = {};
  classified = false;
  return session.engine_->Run(session, request, {}, this);
}

}  // namespace engine

}  // namespace reprise
