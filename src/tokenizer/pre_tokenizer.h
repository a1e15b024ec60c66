// PreTokenizer: the regex split that byte-level BPE runs before merging, chosen by the
// vocabulary's `tokenizer.ggml.pre` name (Llama 3, Qwen2, GPT-2, SmolLM, ...).
//
// The patterns are the ones the models' tokenizers use (and llama.cpp's src/llama-vocab.cpp
// lists), compiled with PCRE2 in UTF + UCP mode, JIT-compiled when the platform allows.
// Splitting is total: every byte of the input ends up in exactly one word, in order; text that
// no pattern matches (such as bytes that are not valid UTF-8, which PCRE2 never matches)
// becomes a word of its own. Several patterns apply one after the other, each to the words
// the previous one produced.
//
// Immutable after Create(); thread-safe (each Split() uses its own match state).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace reprise::tokenizer {

class PreTokenizer {
 public:
  // Builds the splitter for a `tokenizer.ggml.pre` name: "llama3"/"llama-bpe"/"llama-v3",
  // "qwen2"/"deepseek-r1-qwen", "gpt2"/"gpt-2", "smollm"/"starcoder", and "default" (also used
  // for an empty name). Errors: Unimplemented (a name we do not know), Internal (a pattern
  // failed to compile).
  static Result<PreTokenizer> Create(std::string_view pre);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;
  ~PreTokenizer();

  // Appends the words of `text` to `words`; the views point into `text`.
  void Split(std::string_view text, std::vector<std::string_view>& words) const;

  // Whether BPE should emit a whole word as one token when the vocabulary has it, before
  // trying merges (tiktoken's behaviour; llama.cpp's `ignore_merges`, set for Llama 3).
  bool ignore_merges() const { return ignore_merges_; }

  // The number of patterns applied in turn.
  size_t num_patterns() const { return patterns_.size(); }

 private:
  class Pattern;
  PreTokenizer() = default;

  std::vector<std::unique_ptr<Pattern>> patterns_;
  bool ignore_merges_ = false;
};

}  // namespace reprise::tokenizer
