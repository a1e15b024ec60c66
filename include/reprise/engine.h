// Reprise's public API: load a model, tokenize, generate.
//
// An Engine owns one loaded model and one sequence state. It is confined to one thread; run
// several Engines (or, later, the server) for concurrency. All fallible calls return a
// Status / Result (reprise/status.h); nothing throws.
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
}  // namespace engine

struct EngineOptions {
  std::string model_path;
  // KV cache size in tokens; 0 = the model's trained context, at most 4096.
  int context_tokens = 0;
  // Use the plain float reference forward pass (slow; the oracle for tests).
  bool use_reference = false;
  // Worker threads for the compiled graphs; 0 = every core.
  int num_threads = 0;
  // Token capacity of the prefill graph; 0 = the default (or the calibrated value).
  int prefill_capacity = 0;
};

struct ChatTurn {
  std::string role;  // system, user, assistant
  std::string content;
};

struct GenerateRequest {
  std::string prompt;            // plain text, used when `messages` is empty
  std::vector<ChatTurn> messages;  // chat: formatted with the model's chat template
  bool chat = false;             // format `prompt` as one user turn
  int max_new_tokens = 128;
  float temperature = 0.0f;      // 0 = greedy
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
};

struct TokenPiece {
  int32_t id;
  std::string text;  // the bytes it decodes to
};

class Engine {
 public:
  // Errors: those of loading the model (NotFound, Corrupt, Unimplemented, ...).
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Tokenizes `text`; with `parse_special`, texts of special tokens become those tokens.
  std::vector<TokenPiece> Tokenize(std::string_view text, bool add_special,
                                   bool parse_special) const;

  // Generates a continuation (or a chat reply), streaming text to `on_text` when given
  // (return false from it to stop). Each call starts from an empty context.
  // Errors: InvalidArgument (empty or over-long prompt, bad sampling options).
  Result<GenerateResult> Generate(const GenerateRequest& request,
                                  const std::function<bool(std::string_view)>& on_text = {});

  // One line describing the model and the backend.
  std::string Describe() const;
  int context_tokens() const;

 private:
  Engine();
  std::unique_ptr<engine::LoadedModel> model_;
  std::unique_ptr<engine::InferenceBackend> backend_;
};

}  // namespace reprise
