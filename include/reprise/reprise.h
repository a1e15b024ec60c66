/* Reprise's C API: the engine of reprise/engine.h behind opaque handles, for C programs and
 * for the foreign-function interfaces of other languages (Kotlin/JNI on Android, Swift on
 * iOS, Python ctypes, ...).
 *
 * Conventions:
 *  - Every fallible call returns a reprise_status; REPRISE_OK (0) is success. On failure, when
 *    `error` is not NULL, *error receives a message to free with reprise_string_free.
 *  - Structs of options are filled with defaults by their *_init function first; fields added
 *    in later versions then keep their defaults. New fields are only ever appended, so the
 *    fields before them keep their offsets.
 *  - Strings are UTF-8, NUL-terminated, borrowed for the duration of the call.
 *  - An engine is thread-safe: reprise_generate may be called from several threads at once
 *    (up to `sessions` run at a time, the others wait). A session is one conversation, used by
 *    one thread at a time; close it before destroying its engine.
 *  - A request is cancelled from any thread with reprise_cancel on its token.
 */
#ifndef REPRISE_REPRISE_H_
#define REPRISE_REPRISE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define REPRISE_API __attribute__((visibility("default")))
#else
#define REPRISE_API
#endif

typedef enum reprise_status {
  REPRISE_OK = 0,
  REPRISE_INVALID_ARGUMENT = 1,
  REPRISE_NOT_FOUND = 2,
  REPRISE_CORRUPT = 3,
  REPRISE_IO_ERROR = 4,
  REPRISE_RESOURCE_EXHAUSTED = 5,
  REPRISE_UNAVAILABLE = 6,
  REPRISE_CANCELLED = 7,
  REPRISE_UNIMPLEMENTED = 8,
  REPRISE_INTERNAL = 9
} reprise_status;

typedef enum reprise_reuse_method {
  REPRISE_REUSE_NONE = 0,
  REPRISE_REUSE_PREFIX = 1, /* exact reuse of a cached prefix */
  REPRISE_REUSE_FULL = 2,   /* cached chunks at new positions, nothing recomputed */
  REPRISE_REUSE_BLEND = 3   /* cached chunks at new positions, selective recompute */
} reprise_reuse_method;

typedef enum reprise_kv_codec { REPRISE_CODEC_F16 = 0, REPRISE_CODEC_INT8 = 1 } reprise_kv_codec;

/* Which reused tokens blend recomputes. */
typedef enum reprise_token_selection {
  REPRISE_SELECT_DEVIATION = 0,          /* whose KV deviates most at the check layer */
  REPRISE_SELECT_ATTENTION = 1,          /* those the prompt's last new tokens attend to most */
  REPRISE_SELECT_ATTENTION_DEVIATION = 2 /* the largest product of the two (default) */
} reprise_token_selection;

/* The int8 arithmetic of the layers' matmuls (llm.npu's NPU-style static INT8). */
typedef enum reprise_int8_scheme {
  REPRISE_INT8_PER_BLOCK = 0,  /* a scale per 32 activations at run time (default) */
  REPRISE_INT8_PER_TENSOR = 1, /* one static scale per tensor, int32 over the whole row */
  REPRISE_INT8_SHADOW = 2      /* per-tensor, the outlier channels computed in float */
} reprise_int8_scheme;

typedef struct reprise_engine reprise_engine;
typedef struct reprise_session reprise_session;
typedef struct reprise_cancel_token reprise_cancel_token;
typedef struct reprise_store_admin reprise_store_admin;

typedef struct reprise_engine_options {
  const char* model_path;     /* a GGUF file; required */
  int context_tokens;         /* per session; 0 = the model's, at most 4096 */
  int sessions;               /* requests that run at once; default 1 */
  int num_threads;            /* 0 = every core */
  reprise_reuse_method reuse; /* default REPRISE_REUSE_PREFIX */
  double recompute_ratio;     /* blend; default kDefaultRecomputeRatio, reprise/defaults.h */
  int64_t cache_mb;           /* memory for cached KV, MiB; default 1024 */
  const char* store_dir;      /* a persistent KV store folder; NULL = memory only */
  const char* name_space;     /* of requests that name none; NULL = "default" */
  int64_t store_disk_mb;      /* default 8192 */
  reprise_kv_codec store_codec;
  int batch_decode;      /* nonzero: concurrent sessions' decode steps run as one graph
                            call (more tokens/s in all); default 1 */
  int store_admit_after; /* write a chunk to flash once its text was seen in this many
                            prompts (system, document, skill and tool segments at once);
                            default 1 = every chunk */
  reprise_token_selection token_selection; /* blend; default
                                              REPRISE_SELECT_ATTENTION_DEVIATION */
  int static_shapes; /* nonzero: every graph call computes its full capacity, padding included,
                        as an NPU must (same results); default 0 */
  reprise_int8_scheme int8_scheme; /* default REPRISE_INT8_PER_BLOCK; the static schemes
                                      measure the model's activation ranges at load */
  double outlier_fraction;         /* REPRISE_INT8_SHADOW: share of float channels, [0, 0.5];
                                      default 0.01 */
  int out_of_order_groups;         /* > 1: a multi-call prefill's subgraphs run out of order on this
                                      many worker groups (same results); default 0 = in order */
  int out_of_order_window;         /* calls in flight out of order, 1-64; default 2 */
  const char* store_remote;        /* a remote tier shared by servers (needs store_dir):
                                      redis://[user:password@]host:port[/db]; NULL = none */
  int store_remote_timeout_ms;     /* each remote operation gives up after this; default 50 */
  int64_t store_remote_ttl_s;      /* remote entries expire after this; 0 = never; default 7 days */
} reprise_engine_options;

typedef struct reprise_segment {
  const char* role; /* system, document, question, ... */
  const char* text;
} reprise_segment;

/* Reusable context: a retrieved document, or a skill / tool description. */
typedef struct reprise_document {
  const char* id;   /* optional (NULL = none); shown to the model as the title */
  const char* text; /* required */
} reprise_document;

typedef struct reprise_request {
  const char* prompt;              /* used when num_segments is 0 */
  const reprise_segment* segments; /* a prompt made of segments, as they come */
  size_t num_segments;
  int chat;           /* nonzero: format `prompt` with the model's chat template */
  int max_new_tokens; /* default 128 */
  float temperature;  /* 0 = greedy (default) */
  int top_k;          /* default 40 */
  float top_p;        /* default 0.95 */
  uint64_t seed;
  const char* name_space;       /* NULL = the engine's or the session's */
  reprise_cancel_token* cancel; /* NULL = not cancellable */
  /* Appended after the fields above (see the conventions at the top). */
  /* Each its own segment, its KV reused wherever it appears: in a chat after the leading
   * system messages (skills first, then documents), each a system turn "Document <id>:\n..."
   * ("Skill <id>:\n..."); in a plain prompt before it, each followed by a blank line. */
  const reprise_document* documents;
  size_t num_documents;
  const reprise_document* skills;
  size_t num_skills;
  int max_prompt_tokens; /* refuse a longer prompt (REPRISE_INVALID_ARGUMENT); 0 = no limit */
  int keep_kv; /* nonzero (default): keep this request's KV for later requests; 0: reuse what is
                  cached, add nothing (a one-off or private prompt) */
  /* Non-NULL: receives the logits of the first generated token (the distribution the prompt's
   * prefill produced: what reuse quality is judged by), reprise_engine_vocab_size() floats;
   * `first_token_logits_size` (the buffer's length, in floats) smaller than that is
   * REPRISE_INVALID_ARGUMENT, before anything runs. */
  float* first_token_logits;
  size_t first_token_logits_size;
} reprise_request;

typedef struct reprise_reuse_report {
  int tokens_prefix, tokens_reused, tokens_recomputed, tokens_new;
  double match_ms, kv_prep_ms, compute_ms;
  int64_t chunks_from_memory, chunks_from_flash;
} reprise_reuse_report;

typedef struct reprise_result {
  char* text;        /* the generated text; owned, freed by reprise_result_free */
  char* stop_reason; /* "length", "end of generation", "context full", "stopped", "cancelled" */
  int prompt_tokens;
  int generated_tokens;
  double ttft_ms;
  double decode_tokens_per_second;
  reprise_reuse_report reuse;
} reprise_result;

/* Receives text as it is generated (complete UTF-8 sequences, not NUL-terminated); return
 * nonzero to go on, 0 to stop. */
typedef int (*reprise_text_callback)(const char* text, size_t length, void* user_data);

REPRISE_API const char* reprise_version(void);
REPRISE_API const char* reprise_status_name(reprise_status status);
REPRISE_API void reprise_string_free(char* string);

REPRISE_API void reprise_engine_options_init(reprise_engine_options* options);
REPRISE_API reprise_status reprise_engine_create(const reprise_engine_options* options,
                                                 reprise_engine** engine, char** error);
REPRISE_API void reprise_engine_destroy(reprise_engine* engine);
/* One line describing the model and the backend; owned by the engine. */
REPRISE_API const char* reprise_engine_describe(const reprise_engine* engine);
/* Entries of the model's vocabulary (the length of a request's first_token_logits); 0 for a
 * NULL engine. */
REPRISE_API int reprise_engine_vocab_size(const reprise_engine* engine);

REPRISE_API void reprise_request_init(reprise_request* request);
/* Runs a request on a free slot of the engine. `on_text` may be NULL. `result` is filled on
 * success (free it with reprise_result_free). */
REPRISE_API reprise_status reprise_generate(reprise_engine* engine, const reprise_request* request,
                                            reprise_text_callback on_text, void* user_data,
                                            reprise_result* result, char** error);
REPRISE_API void reprise_result_free(reprise_result* result);

/* A conversation of one's own, in `name_space` (NULL = the engine's). */
REPRISE_API reprise_status reprise_session_open(reprise_engine* engine, const char* name_space,
                                                reprise_session** session, char** error);
/* The same with its own reuse method (e.g. an exact-prefix session on a blend engine); a
 * reusing session on an engine made with REPRISE_REUSE_NONE is REPRISE_INVALID_ARGUMENT. */
REPRISE_API reprise_status reprise_session_open_with_reuse(reprise_engine* engine,
                                                           const char* name_space,
                                                           reprise_reuse_method reuse,
                                                           reprise_session** session, char** error);
REPRISE_API reprise_status reprise_session_generate(reprise_session* session,
                                                    const reprise_request* request,
                                                    reprise_text_callback on_text, void* user_data,
                                                    reprise_result* result, char** error);
REPRISE_API void reprise_session_close(reprise_session* session);

/* Token-level use (reprise::Session::Evaluate): tokenize a text into `ids` (at most `capacity`;
 * `*count` = the tokens the text has, so a short buffer can be sized and the call repeated:
 * REPRISE_INVALID_ARGUMENT then, `ids` unchanged). */
REPRISE_API reprise_status reprise_tokenize(const reprise_engine* engine, const char* text,
                                            int add_special, int32_t* ids, size_t capacity,
                                            size_t* count, char** error);
/* Runs `tokens` at the next positions of the session's sequence (no reuse) and writes the
 * logits after the last one into `logits` (at least reprise_engine_vocab_size() entries).
 * Errors (sequence unchanged): REPRISE_INVALID_ARGUMENT for no tokens, an id outside the
 * vocabulary, a context that cannot hold them, a short logits buffer. */
REPRISE_API reprise_status reprise_session_evaluate(reprise_session* session, const int32_t* tokens,
                                                    size_t num_tokens, float* logits,
                                                    size_t logits_size, char** error);
/* Tokens in the session's sequence; drop those from `num_tokens` on (0 empties it). */
REPRISE_API int reprise_session_num_tokens(const reprise_session* session);
REPRISE_API reprise_status reprise_session_truncate(reprise_session* session, int num_tokens,
                                                    char** error);

/* Cancellation: create a token, put it in requests, call reprise_cancel from any thread. A
 * token stays cancelled until reset. */
REPRISE_API reprise_cancel_token* reprise_cancel_token_create(void);
REPRISE_API void reprise_cancel(reprise_cancel_token* token);
REPRISE_API void reprise_cancel_token_reset(reprise_cancel_token* token);
REPRISE_API void reprise_cancel_token_destroy(reprise_cancel_token* token);

/* Store administration (reprise/store_admin.h): a persistent KV store folder looked after
 * without a model — safe beside engines that use it. */
typedef struct reprise_store_stats {
  int64_t chunks;        /* of the whole store, or of one namespace */
  int64_t bytes_on_disk; /* likewise */
  int64_t namespaces;
  int64_t corrupt_dropped; /* chunk files that failed their checks, ever */
  int recovery_skipped;    /* nonzero: another process had it open; leftovers stayed */
} reprise_store_stats;

typedef struct reprise_store_gc_report {
  int64_t rows_missing_file, orphan_files, corrupt, evicted;
  int64_t evicted_bytes; /* -1 when bad rows were dropped too (then unknown) */
} reprise_store_gc_report;

/* Opens the store in `dir` (created unless `read_only`; a read-only open of a folder without
 * a store fails with REPRISE_NOT_FOUND). `disk_mb`: the flash budget gc enforces; 0 = 8192. */
REPRISE_API reprise_status reprise_store_admin_open(const char* dir, int64_t disk_mb, int read_only,
                                                    reprise_store_admin** admin, char** error);
REPRISE_API void reprise_store_admin_close(reprise_store_admin* admin);
/* Counts of the whole store (`name_space` NULL) or of one namespace. */
REPRISE_API reprise_status reprise_store_admin_stats(reprise_store_admin* admin,
                                                     const char* name_space,
                                                     reprise_store_stats* stats, char** error);
/* Deletes the chunks of `name_space`, or of every namespace when NULL. */
REPRISE_API reprise_status reprise_store_admin_clear(reprise_store_admin* admin,
                                                     const char* name_space, char** error);
/* Pins (pinned nonzero) or unpins chunk `chunk_id` of `name_space`, or the whole namespace
 * when `whole_namespace` is nonzero (chunk_id is then ignored). */
REPRISE_API reprise_status reprise_store_admin_pin(reprise_store_admin* admin,
                                                   const char* name_space, uint64_t chunk_id,
                                                   int whole_namespace, int pinned, char** error);
/* Verifies every file, repairs, and evicts down to the flash budget. */
REPRISE_API reprise_status reprise_store_admin_gc(reprise_store_admin* admin,
                                                  reprise_store_gc_report* report, char** error);

#ifdef __cplusplus
}
#endif

#endif /* REPRISE_REPRISE_H_ */
