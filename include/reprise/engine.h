// Reprise's public API: load a model, tokenize, generate — with KV reuse across requests.
//
// An Engine owns one loaded model and one sequence state. Prompts are lists of segments (a
// system prompt, documents, chat turns, skills, the question); with reuse on, the KV of
// segments seen before is reused: a shared prefix exactly, other chunks at their new
// positions with selective recompute (method "blend"). An Engine is confined to one thread;
// run several Engines (or the server) for concurrency. Fallible calls return a Status /
// Result (reprise/status.h); nothing throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/status.h"

namespace reprise {

namespace engine {
class LoadedModel;
class InferenceBackend;
class ReuseSession;
}  // namespace engine
namespace kv {
class ChunkCache;
}  // namespace kv
namespace store {
class ChunkStore;
}  // namespace store

struct EngineOptions {
  std::string model_path;
  // KV cache size in tokens; 0 = the model's trained context, at most 4096.
  int context_tokens = 0;
  // Use the plain float reference forward pass (slow; the oracle for tests). No reuse.
  bool use_reference = false;
  // Worker threads for the compiled graphs; 0 = every core.
  int num_threads = 0;
  // Token capacity of the prefill graph; 0 = the default (or the calibrated value).
  int prefill_capacity = 0;
  // KV reuse across requests: "none", "prefix" (exact, lossless), "full" (cached chunks at
  // new positions, no recompute) or "blend" (with selective recompute).
  std::string reuse = "prefix";
  double recompute_ratio = 0.25;
  int recompute_capacity = 0;  // 0 = default (or calibrated)
  // blend's quality guard: a recompute call whose reused tokens deviate more than this at the
  // check layer (relative squared error of K) is prefilled in full. 0 = off; the scale
  // depends on the model (docs/benchmarks.md).
  double quality_guard = 0.0;
  // Memory for cached chunks, in MiB (the store's memory pool when `store_dir` is set).
  int64_t cache_mb = 1024;
  // A persistent KV store (memory pool + flash): cached chunks survive restarts. Empty = memory
  // only. Chunks live in `name_space` (one per app or API key).
  std::string store_dir;
  std::string name_space = "default";
  int64_t store_disk_mb = 8192;
  std::string store_codec = "f16";  // or "int8" (INT8 + Hadamard, half the bytes)
  // Where `reprise calibrate` keeps its results; empty = do not look.
  std::string calibration_dir;
};

struct ChatTurn {
  std::string role;  // system, user, assistant
  std::string content;
};

struct Segment {
  std::string role;  // system, document, turn, skill, question, ...
  std::string text;
};

struct GenerateRequest {
  std::string prompt;              // plain text, used when the lists below are empty
  std::vector<Segment> segments;   // a prompt made of segments (documents, ...), as they come
  std::vector<ChatTurn> messages;  // chat: formatted with the model's chat template, a segment each
  bool chat = false;               // format `prompt` as one user turn
  int max_new_tokens = 128;
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 40;
  float top_p = 0.95f;
  uint64_t seed = 0;
};

struct GenerateResult {
  std::string text;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> generated_tokens;
  double ttft_ms = 0.0;
  double decode_tokens_per_second = 0.0;
  std::string stop_reason;
  // Where the prompt's KV came from.
  int tokens_prefix = 0, tokens_reused = 0, tokens_recomputed = 0, tokens_new = 0;
};

struct TokenPiece {
  int32_t id;
  std::string text;  // the bytes it decodes to
};

class Engine {
 public:
  // Errors: those of loading the model (NotFound, Corrupt, Unimplemented, ...),
  // InvalidArgument for bad options.
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Tokenizes `text`; with `parse_special`, texts of special tokens become those tokens.
  std::vector<TokenPiece> Tokenize(std::string_view text, bool add_special,
                                   bool parse_special) const;

  // Generates a continuation (or a chat reply), streaming text to `on_text` when given
  // (return false from it to stop). Each call starts a new sequence; with reuse on, KV of
  // earlier requests is reused. Errors: InvalidArgument (empty or over-long prompt, bad
  // sampling options).
  Result<GenerateResult> Generate(const GenerateRequest& request,
                                  const std::function<bool(std::string_view)>& on_text = {});

  // One line describing the model and the backend.
  std::string Describe() const;
  // One line about the KV store (chunks, bytes, hits), or "" without one.
  std::string DescribeStore() const;
  int context_tokens() const;

 private:
  Engine();
  std::unique_ptr<engine::LoadedModel> model_;
  std::unique_ptr<engine::InferenceBackend> reference_;  // with use_reference
  std::unique_ptr<store::ChunkStore> store_;
  std::unique_ptr<kv::ChunkCache> cache_;          // a memory cache, or a namespace of store_
  std::unique_ptr<engine::ReuseSession> session_;  // otherwise
};

}  // namespace reprise
