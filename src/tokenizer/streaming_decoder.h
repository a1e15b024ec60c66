// StreamingDecoder: turns generated tokens into text one token at a time, for streaming
// output.
//
// A character can span tokens: SPM byte-fallback tokens carry one byte each (an emoji is four
// <0xXX> tokens) and byte-level BPE tokens may end inside a multi-byte character. Push()
// therefore holds back the bytes of an incomplete UTF-8 sequence at the end of the text and
// returns only what is complete; Flush() hands out whatever is still held. Bytes that can
// never form a character (invalid UTF-8) are passed through, not replaced. The concatenation
// of everything returned equals Tokenizer::Decode of the same tokens with the same options.
//
// Confined to one thread (one decoder per sequence); the Tokenizer must outlive it.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace reprise::tokenizer {

class StreamingDecoder {
 public:
  // The defaults suit a reply generated from scratch after a chat prompt: special tokens are
  // left out, and an SPM vocabulary's leading space (llama.cpp and llama2.c strip it after
  // BOS) is dropped. Set strip_leading_space = false when continuing earlier text.
  explicit StreamingDecoder(const Tokenizer& tokenizer,
                            DecodeOptions options = DecodeOptions{true, true})
      : tokenizer_(&tokenizer), options_(options) {}

  // Adds one token; returns the text completed by it (often empty for partial characters).
  std::string Push(TokenId id);

  // Returns the held-back bytes (an incomplete character at the end of the stream).
  std::string Flush();

  // Forgets everything, as if newly constructed.
  void Reset();

  // The number of bytes held back.
  size_t num_pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  std::string pending_;         // an incomplete UTF-8 sequence, at most 3 bytes
  bool has_output_ = false;     // whether any byte was produced (returned or pending)
  bool strip_checked_ = false;  // whether the first text piece has been seen
};

}  // namespace reprise::tokenizer
