// SpmEncoder: SentencePiece-style BPE (`tokenizer.ggml.model` "llama"), the tokenizer of
// Llama 1/2, TinyLlama and the llama2.c models.
//
// The text arrives already normalized by the Tokenizer (a leading space added where the
// vocabulary asks for it, every space replaced by U+2581). It starts as one symbol per UTF-8
// character (a byte that is not valid UTF-8 is a symbol of its own); the adjacent pair whose
// concatenation is a piece with the highest score is merged until no pair forms a piece.
// Ties go to the leftmost pair. A final symbol that is not a piece falls back to its bytes'
// <0xXX> tokens, or to the unknown token when the vocabulary has no byte tokens.
//
// Only normal, user-defined and untyped pieces take part in merging: control, unknown, byte
// and unused tokens are never produced from text, as in SentencePiece.
//
// Immutable after Create(); thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace reprise::tokenizer {

class SpmEncoder {
 public:
  // `vocab` must outlive the encoder and not change. Does not fail today; returns Result so
  // that vocabulary checks can be added.
  static Result<SpmEncoder> Create(const Vocab& vocab);

  SpmEncoder(SpmEncoder&&) noexcept = default;
  SpmEncoder& operator=(SpmEncoder&&) noexcept = default;
  SpmEncoder(const SpmEncoder&) = delete;
  SpmEncoder& operator=(const SpmEncoder&) = delete;

  // Appends the tokens of `normalized_text` (spaces already turned into U+2581) to `out`.
  void Encode(std::string_view normalized_text, std::vector<TokenId>& out) const;

  // The <0xXX> token of `byte`, or -1 when the vocabulary has none.
  TokenId byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

 private:
  struct Symbol {
    int32_t prev;
    int32_t next;
    size_t offset;     // into the text
    size_t num_bytes;  // 0 once merged into its left neighbour
  };
  struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    size_t num_bytes;  // of the merged piece, to detect stale entries
  };

  explicit SpmEncoder(const Vocab& vocab) : vocab_(&vocab) {}

  TokenId FindPiece(std::string_view text) const;
  void TryAddBigram(std::string_view text, const std::vector<Symbol>& symbols, int32_t left,
                    std::vector<Bigram>& heap) const;
  void EmitSymbol(std::string_view piece, std::vector<TokenId>& out) const;

  const Vocab* vocab_;
  std::unordered_map<std::string_view, TokenId> piece_to_id_;  // mergeable pieces only
  std::array<TokenId, 256> byte_tokens_{};
};

}  // namespace reprise::tokenizer
