// Tokenizer: text <-> token ids for a model's vocabulary; the one entry point of this layer.
//
// Create() takes a Vocab (read from GGUF by ReadVocabFromGguf, or built by an importer) and
// picks the algorithm from its kind: SentencePiece-style BPE (SpmEncoder) or byte-level BPE
// (BpeEncoder). Around the algorithm it does what llama.cpp's llama_tokenize does:
//   * special tokens: the texts of control and unknown tokens (e.g. "<|im_start|>") are
//     recognised inside the input only when EncodeOptions::parse_special is set; user-defined
//     tokens (e.g. Qwen's "<think>") are always recognised. Longer texts win.
//   * SPM normalization: a space is prepended to each piece of text that starts the input or
//     follows a special token (when `add_space_prefix`), and spaces become U+2581.
//   * BOS/EOS from the vocabulary's add_bos/add_eos when EncodeOptions::add_special is set.
// Any byte string can be encoded, including invalid UTF-8: SPM falls back to <0xXX> tokens
// and byte-level BPE has a token for every byte, so Decode(Encode(x), skip_special) == x for
// every x when no special tokens are parsed, except with SPM vocabularies: one that lacks byte
// tokens has to use <unk>; U+2581 in the input reads as a space; and with add_space_prefix a
// space is added after every user-defined token found in the text (as llama.cpp does). On valid UTF-8 the ids equal llama.cpp's; on invalid bytes they differ,
// since llama.cpp replaces them with U+FFFD before byte-level BPE (and SPM groups a broken
// sequence with the bytes after it), losing them.
//
// Immutable after Create(); thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace reprise::tokenizer {

class BpeEncoder;
class SpmEncoder;

// Bytes [offset, offset + length) of a text.
struct TextRange {
  size_t offset = 0;
  size_t length = 0;
  bool operator==(const TextRange&) const = default;
};

struct EncodeOptions {
  // Add BOS (and EOS) as the vocabulary's add_bos (add_eos) says.
  bool add_special = true;
  // Turn the texts of control tokens found in the input into those tokens. Off, they are
  // encoded as plain text (safe for untrusted input).
  bool parse_special = false;
  // With parse_special: ranges of the input that stay text (e.g. the user's content inside a
  // chat template's markers). A control token's text that overlaps one is not parsed; the
  // rest is tokenized exactly as without ranges. Any order; may overlap. Borrowed for the
  // call.
  std::span<const TextRange> literal_ranges;
};

struct DecodeOptions {
  // Leave out control and unknown tokens (BOS, EOS, <|im_end|>, ...). Off, they appear as
  // their text. User-defined tokens always appear.
  bool skip_special = false;
  // SPM with add_space_prefix: drop one leading space from the first text piece when nothing
  // was output before it, undoing the space Encode adds. Turn off when decoding tokens that
  // continue earlier text (a completion after a prompt).
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  // Errors: Corrupt (inconsistent vocabulary, see Vocab::Validate), Unimplemented (a BPE
  // pre-tokenizer we do not support).
  static Result<std::unique_ptr<Tokenizer>> Create(Vocab vocab);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  ~Tokenizer();

  // Requires: text.size() < 2^31.
  std::vector<TokenId> Encode(std::string_view text, const EncodeOptions& options = {}) const;

  // Concatenates the pieces of `ids`. Ids outside the vocabulary decode to nothing. Pieces are
  // joined verbatim: llama.cpp's clean-up of spaces before punctuation (for Llama 3 and other
  // BPE vocabularies) is not applied, so Decode exactly inverts Encode.
  std::string Decode(std::span<const TokenId> ids, const DecodeOptions& options) const;
  std::string Decode(std::span<const TokenId> ids, bool skip_special = false) const {
    return Decode(ids, DecodeOptions{skip_special, true});
  }

  // The token's text as stored in the vocabulary (SPM: U+2581 for space; BPE: GPT-2
  // characters). Empty for an id outside the vocabulary. Valid while the Tokenizer lives.
  std::string_view TokenText(TokenId id) const;

  // The bytes the token stands for: a byte token's byte, a BPE token's raw bytes, a special
  // token's text, nothing for unused tokens. Valid while the Tokenizer lives.
  const std::string& TokenPiece(TokenId id) const;

  bool IsValid(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < num_tokens(); }
  // Control or unknown (what DecodeOptions::skip_special leaves out).
  bool IsSpecial(TokenId id) const;
  // EOS, EOT, EOM, and the other end-of-turn tokens the vocabulary has (llama.cpp's list:
  // <|eot_id|>, <|im_end|>, <|endoftext|>, <|end_of_text|>, <|eom_id|>, <end_of_turn>, ...).
  bool IsEndOfGeneration(TokenId id) const;
  std::span<const TokenId> end_of_generation_ids() const { return end_of_generation_ids_; }

  std::optional<TokenId> bos_id() const { return vocab_.bos_id; }
  std::optional<TokenId> eos_id() const { return vocab_.eos_id; }
  // The vocabulary's EOT, or else the first of <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>
  // found in it.
  std::optional<TokenId> eot_id() const { return eot_id_; }

  // Whether Encode prepends a space to text (SPM with add_space_prefix).
  bool adds_space_prefix() const {
    return vocab_.kind == VocabKind::kSpm && vocab_.add_space_prefix;
  }

  const Vocab& vocab() const { return vocab_; }
  size_t num_tokens() const { return vocab_.num_tokens(); }

 private:
  // A run of input text, or a special token found in it.
  struct Fragment {
    TokenId token;  // -1 for text
    size_t offset;
    size_t length;
  };

  explicit Tokenizer(Vocab vocab);
  void BuildPieces();
  void FindSpecialTokens();
  void SplitSpecialTokens(std::string_view text, const EncodeOptions& options,
                          std::vector<Fragment>& fragments) const;
  void EncodeText(std::string_view text, bool after_special, std::vector<TokenId>& out) const;

  Vocab vocab_;
  std::unique_ptr<SpmEncoder> spm_;
  std::unique_ptr<BpeEncoder> bpe_;
  std::vector<std::string> pieces_;             // [num_tokens] what each token decodes to
  std::vector<TokenId> special_candidates_;     // control/unknown/user-defined, longest first
  std::vector<TokenId> end_of_generation_ids_;  // sorted
  std::optional<TokenId> eot_id_;
};

}  // namespace reprise::tokenizer
