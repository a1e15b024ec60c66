// Reprise's public C++ API: load a model once, serve many requests and conversations, with KV
// reuse across them. (C programs and other languages' FFIs: reprise/reprise.h.)
//
// An Engine owns the model, compiled once (packed weights, fixed-shape graphs, threads), the
// chunk cache (a persistent store when `store_dir` is set) and a pool of `sessions` slots.
//  - Engine::Generate is thread-safe: each call takes a free slot (waiting for one when all
//    are busy), so up to `sessions` requests run at once, e.g. the requests of a server.
//  - Engine::OpenSession gives a Session of one's own (one conversation, one thread); it
//    costs KV memory only — no second model load, no second compilation.
// Prompts are lists of segments (a system prompt, documents, chat turns, skills, the
// question); with reuse on, the KV of segments seen before is reused: a shared prefix
// exactly, other chunks at their new positions with selective recompute (ReuseMethod::kBlend).
// Each request names its namespace (one per app, user or API key): chunks never cross
// namespaces. A request can be cancelled from any thread. Nothing throws: fallible calls
// return a Status / Result (reprise/status.h). This header includes nothing of Reprise's
// sources.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reprise/defaults.h"
#include "reprise/reuse_diagnostics.h"
#include "reprise/status.h"
#include "reprise/types.h"

namespace reprise {

namespace engine {
class CompiledModel;
class LoadedModel;
class InferenceBackend;
class ReuseSession;
struct RecallProbe;
}  // namespace engine
namespace kv {
class ChunkCache;
}  // namespace kv
namespace store {
class ChunkStore;
}  // namespace store

// Expert settings of reuse, for experiments and ablations (`reprise bench reuse`); the
// defaults are the tuned ones (docs/benchmarks.md).
struct ReuseTuning {
  int chunk_tokens = 512;  // the longest chunk a segment is cut into
  ChunkingMode chunking = ChunkingMode::kContent;
  int check_layer = 1;                // where blend measures the deviation
  bool deviation_includes_v = false;  // V's deviation added to K's
  // Keep the check layer's fresh KV for every reused token, not only the recomputed ones.
  bool refresh_check_layer = false;
  int force_first_tokens = 0;   // of every reused run, always recomputed (attention sinks)
  int query_probe_tokens = 32;  // query-aware selection: the prompt's last new tokens probed
  // stable_recompute_min_deviation's tokens past the cut: a reused token of a moved window
  // (a chat history after a dropped turn) at least this far from the cut keeps its KV, but
  // for the repair; nearer ones are recomputed by the r share.
  int stable_context_tokens = 128;
  // Of the tokens kept that way, how many the repair call checks per prompt (those whose KV
  // most likely deviates), recomputing those whose deviation reaches the threshold.
  int stable_repair_tokens = 256;
  int min_match_tokens = 32;  // shortest run of cached tokens reused at a new position
  int max_candidates = 32;    // cached chunks a prompt is matched against, at most
  // Read and place reused KV beside the graph calls (false: all of it before the first).
  bool overlap_kv_preparation = true;
  // With the overlap, run a call's layers as soon as their KV is placed (false: wait for all).
  bool shard_pipeline = true;
  ScheduleStrategy scheduler = ScheduleStrategy::kDp;
  bool store_cost_aware_eviction = true;  // false: LRU
  bool store_prefetch = true;             // the store's idle-time prefetch
#if __cplusplus >= 202002L  // the header itself stays C++17
  bool operator==(const ReuseTuning&) const = default;
#endif
};

// EngineOptions::quality_guard: the model's calibrated threshold.
inline constexpr double kQualityGuardCalibrated = -1.0;

struct EngineOptions {
  std::string model_path;
  // KV cache size of each session, in tokens; 0 = the model's trained context, at most 4096.
  int context_tokens = 0;
  // Slots of Engine::Generate: how many requests run at once (each holds one KV cache).
  int sessions = 1;
  // With several sessions (slots or OpenSession's), run the decode steps of those generating
  // at the same moment as one graph call: the weights are read once per step for all of them
  // (more tokens/s in all; a reply's tokens may differ in the last bits of their logits from
  // an unbatched run's). Off = each session decodes on its own.
  bool batch_decode = true;
  // Use the plain float reference forward pass (slow; the oracle for tests). No reuse;
  // Generate runs on one slot, and each OpenSession session has a forward pass of its own.
  bool use_reference = false;
  // Worker threads for the compiled graphs; 0 = every core. Shared by every session.
  int num_threads = 0;
  // Token capacity of the prefill graph; 0 = the default (or the calibrated value).
  int prefill_capacity = 0;
  ReuseMethod reuse = ReuseMethod::kPrefix;
  double recompute_ratio = kDefaultRecomputeRatio;  // blend: the share recomputed
  int recompute_capacity = 0;                       // 0 = default (or calibrated)
  // blend's quality guard: a recompute call whose reused tokens deviate more than this at the
  // check layer (relative squared error of K) is prefilled in full. 0 = off. The scale
  // depends on the model and the settings: kQualityGuardCalibrated (the default) takes the
  // threshold calibrated for them — 20x the 99th percentile of the deviation that honest
  // reuse of a built-in text leaves, measured once (~7 prefills of up to 1k tokens, at load)
  // and kept in `calibration_dir`, else in `<store_dir>/calibrations`, else for this process.
  // Engine::Create fails when it cannot be measured (a context too short for the text): never
  // silently off. What it promises: docs/reliability.md, "The quality guard".
  double quality_guard = kQualityGuardCalibrated;
  // blend's adaptive recompute: of the r share, tokens whose KV barely deviates at the check
  // layer (relative squared error of K below this) keep their cached KV, so a history that
  // only moved costs little. 0 = off (always the r share). In [0, 1].
  double recompute_min_deviation = 0.0;
  // blend's stable context: when the prompt is a cached context with one block cut out and
  // new text after it (a chat whose window dropped its oldest turns, in messages or plain
  // text; checked token by token), its reused tokens at least ReuseTuning::
  // stable_context_tokens past the cut keep their cached KV without any graph call, but for
  // a repair call that checks those most likely to deviate (ReuseTuning::stable_repair_tokens)
  // and recomputes those whose relative K deviation at the check layer reaches this. Every
  // other reused token (documents in a new order, the tokens right after the cut) is
  // recomputed by the r share as always. 0 = off. In [0, 1].
  double stable_recompute_min_deviation = kDefaultStableRecomputeMinDeviation;
  // blend's token selection. The query-aware ones run a probe of the prompt's last 32 new
  // tokens over the reused KV first. The default, the product of the attention those tokens
  // pay and the deviation, gave the lowest KL for the same recompute budget on every workload
  // measured, at a small share of TTFT (the probe needs every reused token's first layers
  // before the first recompute call): docs/benchmarks.md, "Query-aware selection".
  TokenSelection token_selection = TokenSelection::kAttentionTimesDeviation;
  // Static shapes: every call of the prefill and recompute graphs computes its full capacity,
  // padding included, as an NPU or another ahead-of-time backend must (a CPU can skip the
  // padding: off by default). Same results; the cost of a call no longer depends on how full
  // it is, which is what the chunk-merge scheduler's per-call costs assume.
  bool static_shapes = false;
  // The int8 arithmetic of the layers' matmuls. The static schemes need the model's activation
  // ranges: `reprise calibrate --activations` keeps them in `calibration_dir`; without them a
  // pass over a built-in text measures them at load. Models whose weights are float (F32,
  // F16) take the static schemes too (their matrices are quantized to int8 at load).
  Int8Scheme int8_scheme = Int8Scheme::kPerBlock;
  WeightFormat weight_format = WeightFormat::kAsStored;
  // kShadow: the share of the layers' input channels computed in float, given to the channels
  // that stand out most against their own tensor. In [0, 0.5].
  double outlier_fraction = 0.01;
  // Out-of-order subgraph scheduling (llm.npu): a prompt prefilled in several graph calls runs
  // its (call, shard) subgraphs on this many worker groups (the threads split among them), any
  // ready one on any free group, at most `out_of_order_window` calls in flight. 0 or 1 = in
  // order on every thread (default). Same results.
  int out_of_order_groups = 0;
  int out_of_order_window = 2;
  // Memory for cached chunks, in MiB: the store's memory pool when `store_dir` is set, else
  // the memory cache of each namespace.
  int64_t cache_mb = 1024;
  // A persistent KV store (memory pool + flash): cached chunks survive restarts, and several
  // engines or processes may share it. Empty = memory only.
  std::string store_dir;
  // The namespace of requests that name none.
  std::string name_space = "default";
  int64_t store_disk_mb = 8192;
  KvCodec store_codec = KvCodec::kF16;
  // Admission control: the store writes a chunk to flash once its text was seen in this many
  // prompts; chunks of "system", "document", "skill" and "tool" segments (declared reusable)
  // at once. Until then a chunk lives in the memory pool only, so one-off text (questions,
  // a document retrieved once) does not evict what recurs. 1 = write every chunk. 1-1000.
  int store_admit_after = 1;
  // A remote tier shared by several servers: redis://[user:password@]host:port[/db]. Chunks
  // the store writes back go there too, and lookups that miss memory and flash ask it; every
  // value is checked before use. Needs `store_dir`. Empty = none. The password may come apart
  // (store_remote_password) when the URL has none. Each remote operation gives up after
  // store_remote_timeout_ms (the request goes on with its local tiers); entries expire after
  // store_remote_ttl_s (0 = never).
  std::string store_remote;
  std::string store_remote_password;
  int store_remote_timeout_ms = kDefaultRemoteTimeoutMs;
  int64_t store_remote_ttl_s = kDefaultRemoteTtlSeconds;
  // Where `reprise calibrate` keeps its results, and engines their guard thresholds and
  // activation ranges (measured at load when missing); empty = none (guard thresholds are
  // then kept beside the store, or in memory).
  std::string calibration_dir;
  ReuseTuning tuning;
#if __cplusplus >= 202002L  // the header itself stays C++17
  bool operator==(const EngineOptions&) const = default;
#endif
};

struct ChatTurn {
  std::string role;  // system, user, assistant
  std::string content;
};

struct Segment {
  std::string role;  // system, document, turn, skill, question, ...
  std::string text;
};

// A retrieved document, or a skill / tool description: reusable context that an app sends
// again and again, in any order. Each is a segment of its own, so its KV is reused wherever it
// appears.
struct Document {
  std::string id;  // optional; shown to the model as the document's title
  std::string text;
};

// GenerateRequest::num_choices's bound.
inline constexpr int kMaxChoices = 16;

struct GenerateRequest {
  std::string prompt;              // plain text, used when the lists below are empty
  std::vector<Segment> segments;   // a prompt made of segments (documents, ...), as they come
  std::vector<ChatTurn> messages;  // chat: formatted with the model's chat template, a segment each
  bool chat = false;               // format `prompt` as one user turn
  // Context the app marks as reusable. In a chat they come after the leading system
  // messages (skills first, then documents), each rendered as a system turn of its own
  // ("Document <id>:\n<text>"); in a plain prompt, before `prompt`, each followed by a blank
  // line. Message contents stay text: a special token's text in them (`<|im_end|>`) is never
  // parsed as that token.
  std::vector<Document> documents;
  std::vector<Document> skills;
  // Refuse (InvalidArgument) a prompt longer than this many tokens; 0 = the context's limit.
  int max_prompt_tokens = 0;
  int max_new_tokens = 128;
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 40;
  float top_p = 0.95f;
  uint64_t seed = 0;
  // The namespace whose chunks this request may reuse and adds to; empty = the engine's
  // (EngineOptions::name_space) or the session's.
  std::string name_space;
  // Keep this request's KV (its prompt's chunks, a chat reply) in the namespace's cache for
  // later requests. false: reuse what is cached, add nothing (a one-off or private prompt, a
  // measurement that must not change what the next request finds).
  bool keep_kv = true;
  // Return the logits after the prompt (GenerateResult::first_token_logits): the distribution
  // of the first generated token, e.g. to compare reuse methods or to score choices.
  bool return_first_token_logits = false;
  // Log-probabilities (GenerateResult::logprobs): of each generated token, and of the
  // `top_logprobs` most likely tokens at its step (0-20). They are the log-softmax of the
  // logits the token was sampled from, over the whole vocabulary, before temperature, top-k,
  // top-p or a constraint's mask.
  bool return_logprobs = false;
  int top_logprobs = 0;
  // The log-probability of every prompt token after the first (GenerateResult::
  // prompt_logprobs), with `top_logprobs` alternatives: how evaluation harnesses score a text.
  // The prompt is then run one token at a time after its prefill (its KV replaced by a full
  // computation, so reuse never changes these values): as many decode steps as prompt tokens.
  bool return_prompt_logprobs = false;
  // Constrained decoding: a JSON Schema (text) the reply must be valid against, in the subset
  // docs/serving.md describes ("Structured output"); {"type": "object"} = any JSON object.
  // At each step the tokens that cannot continue a valid document are masked out, and the
  // reply ends once the document is complete. Empty = free text. A schema outside the subset
  // is refused (InvalidArgument naming the keyword).
  std::string json_schema;
  // Choices generated for the prompt (1-16), sharing its one prefill: each later choice starts
  // again from the prompt's KV and its logits, with seed `seed + i` (GenerateResult::
  // more_choices).
  int num_choices = 1;
  // Keep generating past an end-of-generation token (EOS / EOT) until max_new_tokens or the
  // context's end: fixed-length continuations, as benchmarks compare them.
  bool ignore_eos = false;
  // Fill GenerateResult::diagnostics (a few string copies; nothing slower).
  bool diagnose = false;
  // Set to true from any thread to stop the request: before the next prefill graph call or
  // the next token. A request stopped before its first token fails with Cancelled; one
  // stopped later returns what it generated, with stop_reason "cancelled". Null = never.
  const std::atomic<bool>* cancel = nullptr;
};

// Where a prompt's KV came from and where the time to the first token went.
struct ReuseReport {
  // Cached prefix: the same tokens at the same positions after the same path. Exact (a full
  // prefill's KV) unless an earlier request blended part of it: those are counted again in
  // tokens_prefix_inexact (full and blend continue such a path as it stands, as a server slot
  // keeps its KV; prefix reuse takes exact KV only).
  int tokens_prefix = 0;
  int tokens_prefix_inexact = 0;
  int tokens_reused = 0;      // cached chunks at new positions, kept as they were
  int tokens_recomputed = 0;  // cached chunks at new positions, recomputed by selection
  // Of tokens_reused: blend's stable context, a moved window's tokens far from the cut, kept
  // without running through any graph (docs/benchmarks.md, "A chat whose window moves").
  int tokens_stable = 0;
  int tokens_new = 0;       // computed from scratch
  double match_ms = 0.0;    // finding and planning the reuse (the cache's index only)
  double kv_prep_ms = 0.0;  // loading and re-rotating cached KV
  double compute_ms = 0.0;  // the graphs
  // The cached chunks this prompt reuses: those that were in memory, and those read from the
  // store's flash (this request's alone, whatever else runs in the namespace).
  int64_t chunks_from_memory = 0;
  int64_t chunks_from_flash = 0;
  int guard_fallbacks = 0;  // recompute calls the quality guard prefilled in full
  // Which prompt tokens came from the cache: [begin, end) runs in prompt order, covering the
  // tokens_prefix + tokens_reused + tokens_recomputed of them (recomputed tokens were found
  // too). For tools that set them against a recall oracle's mask (`bench serve`).
  std::vector<std::pair<int, int>> found_runs;
};

// A token and its log-probability (natural logarithm).
struct TokenLogprob {
  int32_t id = 0;
  std::string text;  // the bytes it decodes to (part of a UTF-8 character, maybe)
  float logprob = 0.0f;
};

// One position's log-probabilities: the token there and the most likely ones, best first
// (ties: lower id first).
struct PositionLogprobs {
  TokenLogprob token;
  std::vector<TokenLogprob> top;
};

// A choice after the first (GenerateRequest::num_choices): as GenerateResult's own fields.
struct GeneratedChoice {
  std::string text;
  std::vector<int32_t> generated_tokens;
  std::string stop_reason;
  std::vector<PositionLogprobs> logprobs;
};

struct GenerateResult {
  std::string text;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> generated_tokens;
  double ttft_ms = 0.0;
  double decode_tokens_per_second = 0.0;
  // "length", "end of generation", "context full", "stopped" (the callback said so),
  // "cancelled".
  std::string stop_reason;
  std::string name_space;  // the namespace it ran in
  ReuseReport reuse;
  // With GenerateRequest::return_first_token_logits: [vocabulary] logits after the prompt
  // (empty otherwise, and with EngineOptions::use_reference).
  std::vector<float> first_token_logits;
  ReuseDiagnostics diagnostics;  // with GenerateRequest::diagnose
  // With GenerateRequest::return_logprobs: one entry per generated token.
  std::vector<PositionLogprobs> logprobs;
  // With GenerateRequest::return_prompt_logprobs: one entry per prompt token; the first has
  // no log-probability (NaN: nothing precedes it) and no alternatives.
  std::vector<PositionLogprobs> prompt_logprobs;
  // Leading BOS tokens of prompt_tokens that the engine added (0 or 1): not the prompt's text.
  int prompt_bos_tokens = 0;
  // With GenerateRequest::num_choices > 1: the choices after the first (the first is the
  // fields above), in order.
  std::vector<GeneratedChoice> more_choices;
};

struct TokenPiece {
  int32_t id;
  std::string text;  // the bytes it decodes to
};

// Streams text as it becomes complete (UTF-8 safe); return false to stop.
using TextCallback = std::function<bool(std::string_view text)>;
// The same for requests of several choices: `choice` is its index (0 first); returning false
// stops that choice only.
using ChoiceTextCallback = std::function<bool(int choice, std::string_view text)>;

struct SessionOptions {
  // The namespace of this session's requests that name none; empty = the engine's.
  std::string name_space;
  // How this session's requests reuse cached KV; empty = the engine's (EngineOptions::reuse).
  // A session of an engine made with ReuseMethod::kNone cannot reuse (it has no caches).
  std::optional<ReuseMethod> reuse;
};

// What a model file holds, read without compiling it.
struct ModelInfo {
  std::string name;          // general.name ("reprise-random-..." for make-model's files)
  std::string architecture;  // llama, qwen2, qwen3
  int context_length = 0;    // trained context, tokens
  int vocab_size = 0;
  int num_layers = 0;
  // The file. Counts are 64-bit: a file may declare more than 2^31 of anything.
  uint64_t file_bytes = 0;
  uint32_t gguf_version = 0;
  uint64_t num_metadata = 0;  // metadata keys
  uint64_t num_tensors = 0;
  uint64_t num_parameters = 0;                   // elements of every tensor
  std::map<std::string, uint64_t> tensor_types;  // "q8_0" -> 210
  std::string config_summary;                    // the hyper-parameters in one line
  std::string tokenizer;                         // "SPM (llama)", "BPE (gpt2, pre qwen2)"
  uint64_t tokenizer_tokens = 0;                 // its vocabulary's entries
  std::string chat_format;                       // how chat prompts are formatted for it
  // Why the model cannot run here (InspectModelFile only; empty when it can): its
  // hyper-parameters or architecture, its tokenizer.
  std::string config_error;
  std::string tokenizer_error;
};
// Errors: those of loading the model (NotFound, Corrupt, Unimplemented, ...).
Result<ModelInfo> ReadModelInfo(const std::string& path);
// A built-in English text of about 3,000 characters (a children's story, then expository
// prose), for measurements that need real words: calibrations, accuracy checks.
std::string_view SampleText();
// As ReadModelInfo for any well-formed GGUF file: a file that parses but cannot run here (an
// unknown architecture, a missing tokenizer) still gets its info, with the reasons in
// config_error / tokenizer_error (vocab_size etc. then 0). Errors: NotFound, IoError, Corrupt
// (the GGUF container itself is malformed).
Result<ModelInfo> InspectModelFile(const std::string& path);

// A model file's tokenizer and chat format alone (the file is mapped; no weights are packed,
// nothing compiled): a request's prompt tokens exactly as an Engine of the same file builds
// them (segments, chat template, documents and skills), to count or budget prompts before or
// without running them. Thread-safe.
class PromptTokenizer {
 public:
  // Errors: those of loading the model (NotFound, Corrupt, Unimplemented, ...).
  static Result<std::unique_ptr<PromptTokenizer>> Open(const std::string& model_path);
  ~PromptTokenizer();
  PromptTokenizer(const PromptTokenizer&) = delete;
  PromptTokenizer& operator=(const PromptTokenizer&) = delete;

  // The prompt's tokens (GenerateResult::prompt_tokens of the same request), BOS included.
  std::vector<int32_t> PromptTokens(const GenerateRequest& request) const;

 private:
  explicit PromptTokenizer(std::unique_ptr<engine::LoadedModel> model);
  std::unique_ptr<engine::LoadedModel> model_;
};

// The engine's counters at one moment (for a server's metrics).
struct EngineStats {
  int sessions = 0;       // slots of Engine::Generate made so far
  int sessions_busy = 0;  // ... running a request now
  int waiting = 0;        // Engine::Generate calls waiting for a free slot
  int64_t chunks = 0;     // cached chunks (the store's catalog, or the memory caches)
  int64_t bytes_in_memory = 0;
  int64_t bytes_on_disk = 0;  // 0 without a store
  int64_t hits_memory = 0;    // chunk lookups served from memory, since the engine started
  int64_t hits_flash = 0;     // ... loaded from flash
  int64_t evictions = 0;
  // Batched decoding (EngineOptions::batch_decode): graph calls run, and the session steps
  // they carried (steps / calls = the mean batch size). 0 without batching.
  int64_t decode_batch_calls = 0;
  int64_t decode_batch_steps = 0;
  // Memory of the compiled model's packed weights, beside the mapped model file (0 for the
  // reference backend).
  int64_t weights_bytes = 0;
  // The store's own (0 without one): evictions from memory and from flash, chunks written and
  // the write-back thread's time, writes on request threads (0 by design), chunks prefetched,
  // chunk files dropped as corrupt; admission control's counters; why it stopped persisting.
  int64_t pool_evictions = 0;
  int64_t flash_evictions = 0;
  int64_t chunks_written = 0;
  double write_ms_total = 0;
  double write_ms_on_caller = 0;
  int64_t prefetched = 0;
  int64_t corrupt_dropped = 0;
  int64_t admitted_on_recurrence = 0;
  int64_t dropped_unadmitted = 0;
  int64_t chunks_awaiting_admission = 0;
  bool persisting = true;
  std::string persistence_error;
  // The store's remote tier (0 without one): chunks fetched from it, lookups it could not
  // serve, values that failed their checks (never used), operations that gave up, chunks
  // sent, bytes read and written.
  std::string remote_server;
  int64_t remote_hits = 0;
  int64_t remote_misses = 0;
  int64_t remote_bad_values = 0;
  int64_t remote_unavailable = 0;
  int64_t remote_chunks_sent = 0;
  int64_t remote_bytes_read = 0;
  int64_t remote_bytes_written = 0;
};

// One namespace's cache (Engine::StatsOf).
struct NamespaceStats {
  int64_t chunks = 0;
  int64_t bytes = 0;      // in memory
  int64_t evictions = 0;  // from memory
  int64_t hits_memory = 0;
  int64_t hits_flash = 0;
};

// Where one Session::Evaluate call's graph time went (its `profile`): every op of the compiled
// graphs timed (which slows the call a little). The reference backend fills nothing.
struct OpProfile {
  double matmul_ms = 0;
  double attention_ms = 0;
  double other_ms = 0;     // norms, RoPE, SwiGLU, KV stores, quantizing activations, ...
  double matmul_macs = 0;  // multiply-adds the matmuls did
  // The part of the matmul figures whose products are int8 (the quantized weight formats);
  // the rest multiply floats.
  double matmul_int8_ms = 0;
  double matmul_int8_macs = 0;
};

// The machine's peak for the matmuls' inner loops with the kernels the engine runs, on its
// threads (Engine::MeasureMachinePeak): the ceiling to hold OpProfile's rates against.
struct MachinePeak {
  // The kernel set: "avx2", "avx-vnni", "avx512-vnni", "neon-dotprod", "neon-i8mm", "scalar".
  std::string kernels;
  int threads = 0;
  std::string int8_instruction;      // the int8 multiply-add the set's matmuls use
  double int8_gmacs_per_second = 0;  // all threads together, / 1e9
  std::string float_instruction;
  double float_gmacs_per_second = 0;
  double read_gb_per_second = 0;  // streaming reads of a buffer far larger than the caches
};

class Engine;

// One conversation (or one server slot): its own KV cache and sequence state over the
// engine's compiled model and chunk cache. Confined to one thread at a time; must not
// outlive its Engine.
class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // As Engine::Generate, on this session. Each call starts a new sequence.
  Result<GenerateResult> Generate(const GenerateRequest& request, const TextCallback& on_text = {});

  // Token-level use (as llama.h's llama_decode), for an app's own sampling, scoring or
  // benchmarks: runs `num_tokens` tokens at the next positions of this session's sequence
  // (after a Generate, its prompt and reply; after Truncate(0), from the start: a BOS token is
  // not added) and returns the logits after the last one: vocab_size() floats, valid until
  // this session's next call. No reuse: the chunk cache is neither read nor added to. With
  // `profile`, the graphs' ops are timed into it (added to what it holds). Errors:
  // InvalidArgument (no tokens, a token id outside the vocabulary, more tokens than the
  // context has room for), with the sequence unchanged.
  Result<const float*> Evaluate(const int32_t* tokens, size_t num_tokens,
                                OpProfile* profile = nullptr);
  Result<const float*> Evaluate(const std::vector<int32_t>& tokens, OpProfile* profile = nullptr) {
    return Evaluate(tokens.data(), tokens.size(), profile);
  }
  // Tokens in this session's sequence.
  int num_tokens() const;
  // Drops the sequence's tokens from `num_tokens` on (0 empties it). Errors: InvalidArgument
  // when `num_tokens` is negative or beyond the sequence.
  Status Truncate(int num_tokens);

  const std::string& name_space() const { return name_space_; }
  ReuseMethod reuse() const { return reuse_method_; }

 private:
  friend class Engine;
  friend struct engine::RecallProbe;  // benchmarks' recall diagnosis (not the product API)
  Session(Engine& engine, std::string name_space, ReuseMethod reuse);
  Engine* engine_;
  std::string name_space_;
  ReuseMethod reuse_method_;
  std::unique_ptr<engine::ReuseSession> reuse_;          // compiled graphs (or null:)
  std::unique_ptr<engine::InferenceBackend> reference_;  // with use_reference
};

class Engine {
 public:
  // Loads and compiles the model, opens the store. Errors: those of loading the model
  // (NotFound, Corrupt, Unimplemented, ...) and opening the store, InvalidArgument for bad
  // options.
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // A session of one's own (see Session); with EngineOptions::use_reference, a float forward
  // pass of its own. Errors: InvalidArgument (a namespace name that is empty, over 128 bytes,
  // not UTF-8 or with control characters), ResourceExhausted.
  Result<std::unique_ptr<Session>> OpenSession(const SessionOptions& options = {});

  // Tokenizes `text`; with `parse_special`, texts of special tokens become those tokens.
  std::vector<TokenPiece> Tokenize(std::string_view text, bool add_special,
                                   bool parse_special) const;

  // Generates a continuation (or a chat reply), streaming text to `on_text` when given.
  // Each call starts a new sequence; with reuse on, KV of earlier requests in the same
  // namespace is reused. Thread-safe (see the top of this file). Errors: InvalidArgument
  // (empty or over-long prompt, bad sampling options, bad namespace name), Cancelled.
  Result<GenerateResult> Generate(const GenerateRequest& request, const TextCallback& on_text = {});
  // As Generate, streaming each choice's text with its index (GenerateRequest::num_choices).
  Result<GenerateResult> GenerateChoices(const GenerateRequest& request,
                                         const ChoiceTextCallback& on_text);

  // One line describing the model and the backend.
  std::string Describe() const;
  // The backend in a few words: the compiled graphs with their kernels, prefill capacity and
  // threads ("cpu-graphs/avx2, prefill 128, 2 threads"), or "reference" (the float forward
  // pass of EngineOptions::use_reference).
  const std::string& backend_name() const { return backend_name_; }
  // Threads the compiled graphs run on (1 for the reference backend).
  int num_threads() const;
  // Measures the machine's peak (MachinePeak) with the kernels the graphs run, on their
  // threads: about 6 x `seconds` of busy loops plus streaming reads of a 256 MiB buffer. Run it
  // while nothing else computes.
  MachinePeak MeasureMachinePeak(double seconds = 0.1) const;
  // One line about the KV store (chunks, bytes, hits), or "" without one.
  std::string DescribeStore() const;
  int context_tokens() const { return context_tokens_; }
  // The graphs' capacities (Lp, Ls) as given, calibrated or by default, and whether a
  // calibration of this model and thread count supplied them.
  int prefill_capacity() const;
  int recompute_capacity() const;
  bool is_calibrated() const { return is_calibrated_; }
  // Blend's quality guard threshold as resolved (0 = off; EngineOptions::quality_guard).
  double quality_guard() const;
  // Bytes of KV cache one token of a session's sequence holds (K and V of every layer, f16).
  int64_t kv_bytes_per_token() const;
  // Entries of the model's vocabulary (the length of GenerateResult::first_token_logits).
  int vocab_size() const;
  // Waits until the store has persisted every chunk so far (no-op without a store).
  Status Flush();
  // Flush, then drop the store's KV files from the OS page cache, so that the next reads come
  // from storage (cold-start measurements). No-op without a store. Errors: IoError.
  Status DropStoreFromPageCache();
  // The counters of `name_space`'s cache (opened when it was not yet). Errors: InvalidArgument
  // (a bad name, an engine made with ReuseMethod::kNone).
  Result<NamespaceStats> StatsOf(const std::string& name_space);
  // Thread-safe.
  EngineStats Stats() const;

 private:
  friend class Session;
  friend struct engine::RecallProbe;
  Engine();
  Result<std::unique_ptr<Session>> NewSession(std::string name_space,
                                              std::optional<ReuseMethod> reuse = std::nullopt);
  // The chunk cache of `name_space` (opened on first use); null with ReuseMethod::kNone.
  Result<kv::ChunkCache*> CacheOf(const std::string& name_space);
  // `probe`: a benchmark's recall diagnosis of this request (engine/recall_probe.h), or null.
  Result<GenerateResult> Run(Session& session, const GenerateRequest& request,
                             const ChoiceTextCallback& on_text,
                             engine::RecallProbe* probe = nullptr);

  EngineOptions options_;
  int context_tokens_ = 0;
  bool is_calibrated_ = false;
  std::string description_;
  std::string backend_name_;
  std::unique_ptr<engine::LoadedModel> model_;
  std::shared_ptr<const engine::CompiledModel> compiled_;
  std::unique_ptr<store::ChunkStore> store_;
  struct Shared;  // the namespaces' caches and the slot pool, behind their mutex
  std::unique_ptr<Shared> shared_;
};

}  // namespace reprise
