// The C API (include/reprise/reprise.h) over the C++ API (include/reprise/engine.h): opaque
// handles around Engine and Session, statuses as codes with messages, callbacks as function
// pointers. Nothing here throws across the C boundary: the C++ API never throws, and the
// allocations below are the only other source of exceptions (caught: Internal).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "reprise/engine.h"
#include "reprise/reprise.h"
#include "reprise/store_admin.h"

struct reprise_engine {
  std::unique_ptr<reprise::Engine> engine;
  std::string description;
};

struct reprise_session {
  std::unique_ptr<reprise::Session> session;
  int vocab_size = 0;
};

struct reprise_cancel_token {
  std::atomic<bool> cancelled{false};
};

struct reprise_store_admin {
  std::unique_ptr<reprise::StoreAdmin> admin;
};

namespace {

static_assert(static_cast<int>(reprise::StatusCode::kInvalidArgument) == REPRISE_INVALID_ARGUMENT &&
              static_cast<int>(reprise::StatusCode::kNotFound) == REPRISE_NOT_FOUND &&
              static_cast<int>(reprise::StatusCode::kCorrupt) == REPRISE_CORRUPT &&
              static_cast<int>(reprise::StatusCode::kIoError) == REPRISE_IO_ERROR &&
              static_cast<int>(reprise::StatusCode::kResourceExhausted) ==
                  REPRISE_RESOURCE_EXHAUSTED &&
              static_cast<int>(reprise::StatusCode::kUnavailable) == REPRISE_UNAVAILABLE &&
              static_cast<int>(reprise::StatusCode::kCancelled) == REPRISE_CANCELLED &&
              static_cast<int>(reprise::StatusCode::kUnimplemented) == REPRISE_UNIMPLEMENTED &&
              static_cast<int>(reprise::StatusCode::kInternal) == REPRISE_INTERNAL);
static_assert(static_cast<int>(reprise::ReuseMethod::kBlend) == REPRISE_REUSE_BLEND &&
              static_cast<int>(reprise::ReuseMethod::kFull) == REPRISE_REUSE_FULL &&
              static_cast<int>(reprise::ReuseMethod::kPrefix) == REPRISE_REUSE_PREFIX &&
              static_cast<int>(reprise::ReuseMethod::kNone) == REPRISE_REUSE_NONE);
static_assert(static_cast<int>(reprise::TokenSelection::kDeviation) == REPRISE_SELECT_DEVIATION &&
              static_cast<int>(reprise::TokenSelection::kAttention) == REPRISE_SELECT_ATTENTION &&
              static_cast<int>(reprise::TokenSelection::kAttentionTimesDeviation) ==
                  REPRISE_SELECT_ATTENTION_DEVIATION);
static_assert(static_cast<int>(reprise::KvCodec::kF16) == REPRISE_CODEC_F16 &&
              static_cast<int>(reprise::KvCodec::kInt8) == REPRISE_CODEC_INT8);
static_assert(static_cast<int>(reprise::Int8Scheme::kPerBlock) == REPRISE_INT8_PER_BLOCK &&
              static_cast<int>(reprise::Int8Scheme::kPerTensor) == REPRISE_INT8_PER_TENSOR &&
              static_cast<int>(reprise::Int8Scheme::kShadow) == REPRISE_INT8_SHADOW);

// The int a C enum field holds, whatever its value.
template <typename Enum>
int EnumAsInt(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

// A malloc'ed copy (freed by reprise_string_free / reprise_result_free), or NULL.
char* Copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

reprise_status Fail(const reprise::Status& status, char** error) {
  if (error != nullptr) *error = Copy(status.ToString());
  return static_cast<reprise_status>(status.code());
}

reprise_status Fail(reprise_status code, const std::string& message, char** error) {
  if (error != nullptr) *error = Copy(message);
  return code;
}

std::string OrEmpty(const char* s) { return s != nullptr ? s : ""; }

// `count` C documents (`what`: "document", "skill") into `out`. Errors: InvalidArgument.
reprise_status ToDocuments(const reprise_document* in, size_t count, const char* what,
                           std::vector<reprise::Document>& out, char** error) {
  if (count > 0 && in == nullptr) {
    return Fail(REPRISE_INVALID_ARGUMENT,
                std::string("num_") + what + "s > 0 but no " + what + "s given", error);
  }
  for (size_t i = 0; i < count; ++i) {
    if (in[i].text == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  std::string(what) + " " + std::to_string(i) + " has no text", error);
    }
    out.push_back({OrEmpty(in[i].id), in[i].text});
  }
  return REPRISE_OK;
}

// The C++ request of a C one. Errors: InvalidArgument.
reprise_status ToRequest(const reprise_request* in, reprise::GenerateRequest& out, char** error) {
  if (in == nullptr) return Fail(REPRISE_INVALID_ARGUMENT, "no request given", error);
  if (in->num_segments > 0 && in->segments == nullptr) {
    return Fail(REPRISE_INVALID_ARGUMENT, "num_segments > 0 but no segments given", error);
  }
  out.prompt = OrEmpty(in->prompt);
  for (size_t i = 0; i < in->num_segments; ++i) {
    if (in->segments[i].text == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "segment " + std::to_string(i) + " has no text", error);
    }
    out.segments.push_back({OrEmpty(in->segments[i].role), in->segments[i].text});
  }
  if (reprise_status s =
          ToDocuments(in->documents, in->num_documents, "document", out.documents, error);
      s != REPRISE_OK) {
    return s;
  }
  if (reprise_status s = ToDocuments(in->skills, in->num_skills, "skill", out.skills, error);
      s != REPRISE_OK) {
    return s;
  }
  out.max_prompt_tokens = in->max_prompt_tokens;
  out.keep_kv = in->keep_kv != 0;
  out.return_first_token_logits = in->first_token_logits != nullptr;
  out.chat = in->chat != 0;
  out.max_new_tokens = in->max_new_tokens;
  out.temperature = in->temperature;
  out.top_k = in->top_k;
  out.top_p = in->top_p;
  out.seed = in->seed;
  out.name_space = OrEmpty(in->name_space);
  out.cancel = in->cancel != nullptr ? &in->cancel->cancelled : nullptr;
  return REPRISE_OK;
}

reprise_status ToResult(reprise::Result<reprise::GenerateResult> in, reprise_result* out,
                        char** error) {
  if (!in.ok()) return Fail(in.error(), error);
  reprise_result r{};
  r.text = Copy(in->text);
  r.stop_reason = Copy(in->stop_reason);
  if (r.text == nullptr || r.stop_reason == nullptr) {
    reprise_result_free(&r);
    return Fail(REPRISE_RESOURCE_EXHAUSTED, "out of memory", error);
  }
  r.prompt_tokens = static_cast<int>(in->prompt_tokens.size());
  r.generated_tokens = static_cast<int>(in->generated_tokens.size());
  r.ttft_ms = in->ttft_ms;
  r.decode_tokens_per_second = in->decode_tokens_per_second;
  const reprise::ReuseReport& u = in->reuse;
  r.reuse = reprise_reuse_report{u.tokens_prefix, u.tokens_reused,      u.tokens_recomputed,
                                 u.tokens_new,    u.match_ms,           u.kv_prep_ms,
                                 u.compute_ms,    u.chunks_from_memory, u.chunks_from_flash};
  *out = r;
  return REPRISE_OK;
}

reprise::TextCallback ToCallback(reprise_text_callback on_text, void* user_data) {
  if (on_text == nullptr) return {};
  return [on_text, user_data](std::string_view text) {
    return on_text(text.data(), text.size(), user_data) != 0;
  };
}

// Runs `body`, turning an escaping exception (an allocation failure) into a status.
template <typename Fn>
reprise_status Guarded(char** error, Fn&& body) {
  if (error != nullptr) *error = nullptr;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(REPRISE_RESOURCE_EXHAUSTED, "out of memory", error);
  } catch (...) {
    return Fail(REPRISE_INTERNAL, "unexpected exception", error);
  }
}

// reprise_generate and reprise_session_generate: a request on an Engine or a Session (null
// when the caller's handle was NULL, named `what` in the error).
template <typename Target>
reprise_status GenerateOn(Target* target, int vocab_size, const char* what,
                          const reprise_request* request, reprise_text_callback on_text,
                          void* user_data, reprise_result* result, char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (target == nullptr || result == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, std::string(what) + " and result must not be NULL",
                  error);
    }
    *result = reprise_result{};
    reprise::GenerateRequest r;
    if (reprise_status s = ToRequest(request, r, error); s != REPRISE_OK) return s;
    if (request->first_token_logits != nullptr &&
        request->first_token_logits_size < static_cast<size_t>(vocab_size)) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "first_token_logits_size " + std::to_string(request->first_token_logits_size) +
                      " is below the vocabulary's " + std::to_string(vocab_size) + " entries",
                  error);
    }
    reprise::Result<reprise::GenerateResult> generated =
        target->Generate(r, ToCallback(on_text, user_data));
    if (generated.ok() && request->first_token_logits != nullptr) {
      const std::vector<float>& logits = generated->first_token_logits;
      std::copy(logits.begin(),
                logits.begin() + static_cast<std::ptrdiff_t>(
                                     std::min(logits.size(), request->first_token_logits_size)),
                request->first_token_logits);
    }
    return ToResult(std::move(generated), result, error);
  });
}

}  // namespace

extern "C" {

const char* reprise_version(void) { return REPRISE_VERSION; }

const char* reprise_status_name(reprise_status status) {
  switch (status) {
    case REPRISE_OK:
      return "ok";
    case REPRISE_INVALID_ARGUMENT:
      return "invalid argument";
    case REPRISE_NOT_FOUND:
      return "not found";
    case REPRISE_CORRUPT:
      return "corrupt";
    case REPRISE_IO_ERROR:
      return "i/o error";
    case REPRISE_RESOURCE_EXHAUSTED:
      return "resource exhausted";
    case REPRISE_UNAVAILABLE:
      return "unavailable";
    case REPRISE_CANCELLED:
      return "cancelled";
    case REPRISE_UNIMPLEMENTED:
      return "unimplemented";
    case REPRISE_INTERNAL:
      return "internal";
  }
  return "unknown status";
}

void reprise_string_free(char* string) { std::free(string); }

void reprise_engine_options_init(reprise_engine_options* options) {
  if (options == nullptr) return;
  const reprise::EngineOptions d;
  *options = reprise_engine_options{};
  options->context_tokens = d.context_tokens;
  options->sessions = d.sessions;
  options->num_threads = d.num_threads;
  options->reuse = static_cast<reprise_reuse_method>(d.reuse);
  options->recompute_ratio = d.recompute_ratio;
  options->cache_mb = d.cache_mb;
  options->store_disk_mb = d.store_disk_mb;
  options->store_codec = static_cast<reprise_kv_codec>(d.store_codec);
  options->batch_decode = d.batch_decode ? 1 : 0;
  options->store_admit_after = d.store_admit_after;
  options->token_selection = static_cast<reprise_token_selection>(d.token_selection);
  options->static_shapes = d.static_shapes ? 1 : 0;
  options->int8_scheme = static_cast<reprise_int8_scheme>(d.int8_scheme);
  options->outlier_fraction = d.outlier_fraction;
  options->out_of_order_groups = d.out_of_order_groups;
  options->out_of_order_window = d.out_of_order_window;
  options->store_remote_timeout_ms = d.store_remote_timeout_ms;
  options->store_remote_ttl_s = d.store_remote_ttl_s;
}

reprise_status reprise_engine_create(const reprise_engine_options* options, reprise_engine** engine,
                                     char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (options == nullptr || engine == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "options and engine must not be NULL", error);
    }
    *engine = nullptr;
    if (options->model_path == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "no model file given", error);
    }
    // A C caller may store any int in an enum field; read them as ints (loading an
    // out-of-range value as the C++ enum type is undefined behaviour).
    const int reuse = EnumAsInt(options->reuse);
    const int codec = EnumAsInt(options->store_codec);
    const int selection = EnumAsInt(options->token_selection);
    const int int8_scheme = EnumAsInt(options->int8_scheme);
    if (int8_scheme < REPRISE_INT8_PER_BLOCK || int8_scheme > REPRISE_INT8_SHADOW) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "unknown int8 scheme " + std::to_string(int8_scheme) + " (0-2)", error);
    }
    if (reuse < REPRISE_REUSE_NONE || reuse > REPRISE_REUSE_BLEND) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "unknown reuse method " + std::to_string(reuse) + " (0-3)", error);
    }
    if (codec != REPRISE_CODEC_F16 && codec != REPRISE_CODEC_INT8) {
      return Fail(REPRISE_INVALID_ARGUMENT, "unknown KV codec " + std::to_string(codec) + " (0-1)",
                  error);
    }
    if (selection < REPRISE_SELECT_DEVIATION || selection > REPRISE_SELECT_ATTENTION_DEVIATION) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "unknown token selection " + std::to_string(selection) + " (0-2)", error);
    }
    reprise::EngineOptions o;
    o.model_path = options->model_path;
    o.context_tokens = options->context_tokens;
    o.sessions = options->sessions;
    o.num_threads = options->num_threads;
    o.reuse = static_cast<reprise::ReuseMethod>(reuse);
    o.recompute_ratio = options->recompute_ratio;
    o.cache_mb = options->cache_mb;
    o.store_dir = OrEmpty(options->store_dir);
    if (options->name_space != nullptr) o.name_space = options->name_space;
    o.store_disk_mb = options->store_disk_mb;
    o.store_codec = static_cast<reprise::KvCodec>(codec);
    o.batch_decode = options->batch_decode != 0;
    o.store_admit_after = options->store_admit_after;
    o.token_selection = static_cast<reprise::TokenSelection>(selection);
    o.static_shapes = options->static_shapes != 0;
    o.int8_scheme = static_cast<reprise::Int8Scheme>(int8_scheme);
    o.outlier_fraction = options->outlier_fraction;
    o.out_of_order_groups = options->out_of_order_groups;
    o.out_of_order_window = options->out_of_order_window;
    o.store_remote = OrEmpty(options->store_remote);
    o.store_remote_timeout_ms = options->store_remote_timeout_ms;
    o.store_remote_ttl_s = options->store_remote_ttl_s;
    reprise::Result<std::unique_ptr<reprise::Engine>> made = reprise::Engine::Create(o);
    if (!made.ok()) return Fail(made.error(), error);
    auto handle = std::make_unique<reprise_engine>();
    handle->engine = std::move(made).value();
    handle->description = handle->engine->Describe();
    *engine = handle.release();
    return REPRISE_OK;
  });
}

void reprise_engine_destroy(reprise_engine* engine) { delete engine; }

const char* reprise_engine_describe(const reprise_engine* engine) {
  return engine != nullptr ? engine->description.c_str() : "";
}

int reprise_engine_vocab_size(const reprise_engine* engine) {
  return engine != nullptr ? engine->engine->vocab_size() : 0;
}

void reprise_request_init(reprise_request* request) {
  if (request == nullptr) return;
  const reprise::GenerateRequest d;
  *request = reprise_request{};
  request->max_new_tokens = d.max_new_tokens;
  request->temperature = d.temperature;
  request->top_k = d.top_k;
  request->top_p = d.top_p;
  request->max_prompt_tokens = d.max_prompt_tokens;
  request->keep_kv = d.keep_kv ? 1 : 0;
}

reprise_status reprise_generate(reprise_engine* engine, const reprise_request* request,
                                reprise_text_callback on_text, void* user_data,
                                reprise_result* result, char** error) {
  return GenerateOn(engine != nullptr ? engine->engine.get() : nullptr,
                    engine != nullptr ? engine->engine->vocab_size() : 0, "engine", request,
                    on_text, user_data, result, error);
}

void reprise_result_free(reprise_result* result) {
  if (result == nullptr) return;
  std::free(result->text);
  std::free(result->stop_reason);
  result->text = nullptr;
  result->stop_reason = nullptr;
}

namespace {

reprise_status OpenSession(reprise_engine* engine, const char* name_space,
                           std::optional<reprise::ReuseMethod> reuse, reprise_session** session,
                           char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (engine == nullptr || session == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "engine and session must not be NULL", error);
    }
    *session = nullptr;
    reprise::Result<std::unique_ptr<reprise::Session>> opened =
        engine->engine->OpenSession({OrEmpty(name_space), reuse});
    if (!opened.ok()) return Fail(opened.error(), error);
    auto handle = std::make_unique<reprise_session>();
    handle->session = std::move(opened).value();
    handle->vocab_size = engine->engine->vocab_size();
    *session = handle.release();
    return REPRISE_OK;
  });
}

}  // namespace

reprise_status reprise_session_open(reprise_engine* engine, const char* name_space,
                                    reprise_session** session, char** error) {
  return OpenSession(engine, name_space, std::nullopt, session, error);
}

reprise_status reprise_session_open_with_reuse(reprise_engine* engine, const char* name_space,
                                               reprise_reuse_method reuse,
                                               reprise_session** session, char** error) {
  const int method = EnumAsInt(reuse);
  if (method < REPRISE_REUSE_NONE || method > REPRISE_REUSE_BLEND) {
    if (session != nullptr) *session = nullptr;
    return Fail(REPRISE_INVALID_ARGUMENT,
                "unknown reuse method " + std::to_string(method) + " (0-3)", error);
  }
  return OpenSession(engine, name_space, static_cast<reprise::ReuseMethod>(method), session, error);
}

reprise_status reprise_session_generate(reprise_session* session, const reprise_request* request,
                                        reprise_text_callback on_text, void* user_data,
                                        reprise_result* result, char** error) {
  return GenerateOn(session != nullptr ? session->session.get() : nullptr,
                    session != nullptr ? session->vocab_size : 0, "session", request, on_text,
                    user_data, result, error);
}

void reprise_session_close(reprise_session* session) { delete session; }

reprise_status reprise_tokenize(const reprise_engine* engine, const char* text, int add_special,
                                int32_t* ids, size_t capacity, size_t* count, char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (engine == nullptr || text == nullptr || count == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "engine, text and count must not be NULL", error);
    }
    const std::vector<reprise::TokenPiece> pieces =
        engine->engine->Tokenize(text, add_special != 0, /*parse_special=*/false);
    *count = pieces.size();
    if (pieces.size() > capacity || (ids == nullptr && !pieces.empty())) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "the text has " + std::to_string(pieces.size()) + " tokens; the buffer holds " +
                      std::to_string(ids == nullptr ? 0 : capacity),
                  error);
    }
    for (size_t i = 0; i < pieces.size(); ++i) ids[i] = pieces[i].id;
    return REPRISE_OK;
  });
}

reprise_status reprise_session_evaluate(reprise_session* session, const int32_t* tokens,
                                        size_t num_tokens, float* logits, size_t logits_size,
                                        char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (session == nullptr || logits == nullptr || (tokens == nullptr && num_tokens > 0)) {
      return Fail(REPRISE_INVALID_ARGUMENT, "session, tokens and logits must not be NULL", error);
    }
    if (logits_size < static_cast<size_t>(session->vocab_size)) {
      return Fail(REPRISE_INVALID_ARGUMENT,
                  "logits_size " + std::to_string(logits_size) + " is below the vocabulary's " +
                      std::to_string(session->vocab_size) + " entries",
                  error);
    }
    reprise::Result<const float*> out = session->session->Evaluate(tokens, num_tokens);
    if (!out.ok()) return Fail(out.error(), error);
    std::copy(*out, *out + session->vocab_size, logits);
    return REPRISE_OK;
  });
}

int reprise_session_num_tokens(const reprise_session* session) {
  return session != nullptr ? session->session->num_tokens() : 0;
}

reprise_status reprise_session_truncate(reprise_session* session, int num_tokens, char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (session == nullptr) return Fail(REPRISE_INVALID_ARGUMENT, "no session given", error);
    const reprise::Status status = session->session->Truncate(num_tokens);
    return status.ok() ? REPRISE_OK : Fail(status, error);
  });
}

reprise_cancel_token* reprise_cancel_token_create(void) {
  return new (std::nothrow) reprise_cancel_token();
}

void reprise_cancel(reprise_cancel_token* token) {
  if (token != nullptr) token->cancelled.store(true);
}

void reprise_cancel_token_reset(reprise_cancel_token* token) {
  if (token != nullptr) token->cancelled.store(false);
}

void reprise_cancel_token_destroy(reprise_cancel_token* token) { delete token; }

reprise_status reprise_store_admin_open(const char* dir, int64_t disk_mb, int read_only,
                                        reprise_store_admin** admin, char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (dir == nullptr || admin == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "dir and admin must not be NULL", error);
    }
    *admin = nullptr;
    reprise::StoreAdminOptions o;
    o.dir = dir;
    if (disk_mb != 0) o.disk_mb = disk_mb;
    o.read_only = read_only != 0;
    reprise::Result<std::unique_ptr<reprise::StoreAdmin>> opened = reprise::StoreAdmin::Open(o);
    if (!opened.ok()) return Fail(opened.error(), error);
    auto handle = std::make_unique<reprise_store_admin>();
    handle->admin = std::move(opened).value();
    *admin = handle.release();
    return REPRISE_OK;
  });
}

void reprise_store_admin_close(reprise_store_admin* admin) { delete admin; }

reprise_status reprise_store_admin_stats(reprise_store_admin* admin, const char* name_space,
                                         reprise_store_stats* stats, char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (admin == nullptr || stats == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "admin and stats must not be NULL", error);
    }
    *stats = reprise_store_stats{};
    std::optional<std::string> ns;
    if (name_space != nullptr) ns = name_space;
    reprise::Result<reprise::StoreStatus> s = admin->admin->Status(ns);
    if (!s.ok()) return Fail(s.error(), error);
    if (!s->catalog_error.empty()) {
      return Fail(REPRISE_CORRUPT, "the catalog cannot be read: " + s->catalog_error, error);
    }
    stats->chunks = s->chunks;
    stats->bytes_on_disk = s->bytes_on_disk;
    stats->namespaces = s->namespaces;
    stats->corrupt_dropped = s->corrupt_dropped;
    stats->recovery_skipped = s->recovery_skipped ? 1 : 0;
    return REPRISE_OK;
  });
}

reprise_status reprise_store_admin_clear(reprise_store_admin* admin, const char* name_space,
                                         char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (admin == nullptr) return Fail(REPRISE_INVALID_ARGUMENT, "admin must not be NULL", error);
    std::optional<std::string> ns;
    if (name_space != nullptr) ns = name_space;
    reprise::Status s = admin->admin->Clear(ns);
    return s.ok() ? REPRISE_OK : Fail(s, error);
  });
}

reprise_status reprise_store_admin_pin(reprise_store_admin* admin, const char* name_space,
                                       uint64_t chunk_id, int whole_namespace, int pinned,
                                       char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (admin == nullptr || name_space == nullptr) {
      return Fail(REPRISE_INVALID_ARGUMENT, "admin and name_space must not be NULL", error);
    }
    std::optional<uint64_t> chunk;
    if (whole_namespace == 0) chunk = chunk_id;
    reprise::Status s = admin->admin->SetPinned(name_space, chunk, pinned != 0);
    return s.ok() ? REPRISE_OK : Fail(s, error);
  });
}

reprise_status reprise_store_admin_gc(reprise_store_admin* admin, reprise_store_gc_report* report,
                                      char** error) {
  return Guarded(error, [&]() -> reprise_status {
    if (admin == nullptr) return Fail(REPRISE_INVALID_ARGUMENT, "admin must not be NULL", error);
    reprise::Result<reprise::StoreGcReport> r = admin->admin->Gc();
    if (!r.ok()) return Fail(r.error(), error);
    if (report != nullptr) {
      report->rows_missing_file = r->rows_missing_file;
      report->orphan_files = r->orphan_files;
      report->corrupt = r->corrupt;
      report->evicted = r->evicted;
      report->evicted_bytes = r->evicted_bytes;
    }
    return REPRISE_OK;
  });
}

}  // extern "C"
