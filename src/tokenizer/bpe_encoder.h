// BpeEncoder: byte-level BPE (`tokenizer.ggml.model` "gpt2"), the tokenizer of Llama 3, Qwen,
// GPT-2 and SmolLM vocabularies.
//
// Text is split into words by the PreTokenizer; each word's bytes start as one symbol per byte
// (the token of that byte's GPT-2 character) and the adjacent pair with the best merge rank
// (the merge's position in `tokenizer.ggml.merges`) is merged until no ranked pair is left.
// Merges are looked up in a hash map keyed by the pair of symbol ids, and candidate pairs sit
// in a priority queue, so a word of n bytes costs O(n log n). Merge results that are not
// tokens themselves get private symbol ids; a word that ends on one is emitted byte by byte.
// Special tokens are not handled here: the Tokenizer splits them out before calling Encode.
//
// Immutable after Create(); thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace reprise::tokenizer {

class BpeEncoder {
 public:
  // Builds the merge table of `vocab` (which must outlive the encoder and not change).
  // Errors: Unimplemented (unknown pre-tokenizer), Corrupt (a merge line without a space).
  static Result<BpeEncoder> Create(const Vocab& vocab);

  BpeEncoder(BpeEncoder&&) noexcept = default;
  BpeEncoder& operator=(BpeEncoder&&) noexcept = default;
  BpeEncoder(const BpeEncoder&) = delete;
  BpeEncoder& operator=(const BpeEncoder&) = delete;

  // Appends the tokens of `text` (raw bytes, any content) to `out`.
  void Encode(std::string_view text, std::vector<TokenId>& out) const;

  size_t num_merges() const { return merges_.size(); }
  const PreTokenizer& pre_tokenizer() const { return pre_tokenizer_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // symbol id of the merged pair
  };
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t num_bytes;  // 0 once merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // index of the left symbol in the word
    int32_t right;
    int32_t left_id;
    int32_t right_id;
    int32_t result;
  };

  explicit BpeEncoder(const Vocab& vocab, PreTokenizer pre_tokenizer);

  // The symbol id of a GPT-2 text: its token id, or a private id past the vocabulary.
  int32_t SymbolFor(std::string_view gpt2_text,
                    std::unordered_map<std::string, int32_t>& extra_index);
  void EncodeWord(std::string_view word, std::vector<Symbol>& symbols, std::vector<Candidate>& heap,
                  std::vector<TokenId>& out) const;
  void PushCandidate(const std::vector<Symbol>& symbols, int32_t left,
                     std::vector<Candidate>& heap) const;
  void EmitSymbol(int32_t symbol_id, std::vector<TokenId>& out) const;

  const Vocab* vocab_;
  PreTokenizer pre_tokenizer_;
  // GPT-2 text of every token -> id (the last one wins where texts repeat).
  std::unordered_map<std::string_view, TokenId> text_to_id_;
  std::array<int32_t, 256> byte_symbol_{};       // symbol of each single byte
  std::unordered_map<uint64_t, Merge> merges_;   // (left << 32 | right) -> merge
  std::vector<std::string> extra_symbol_bytes_;  // raw bytes of private symbol num_tokens + i
};

}  // namespace reprise::tokenizer
