// Vocab: everything a tokenizer needs, as stored in a GGUF file's `tokenizer.*` metadata.
//
// The GGUF reader and writer both go through this struct, so that the importers and
// `make-model` write exactly what the tokenizers read. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace reprise::tokenizer {

using TokenId = int32_t;

// The most tokens a vocabulary may have (ids are int32_t; headroom for the BPE encoder's extra
// byte symbols). Larger vocabularies are rejected as Corrupt.
inline constexpr size_t kMaxVocabTokens = size_t{1} << 30;

// `tokenizer.ggml.model`: which algorithm the vocabulary is for.
enum class VocabKind : uint8_t {
  kSpm,  // "llama": SentencePiece-style, scores, byte fallback (<0xXX> tokens), U+2581 spaces
  kBpe,  // "gpt2": byte-level BPE with merges and a regex pre-tokenizer
};

// `tokenizer.ggml.token_type` values (the SentencePiece piece types).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocab {
  VocabKind kind = VocabKind::kSpm;
  // `tokenizer.ggml.pre`: the BPE pre-tokenizer ("llama-bpe", "qwen2", "smollm", "gpt2",
  // "default"); empty for SPM.
  std::string pre;
  std::vector<std::string> tokens;     // [num_tokens] token text (SPM: U+2581 for space)
  std::vector<float> scores;           // [num_tokens] SPM piece scores; may be empty for BPE
  std::vector<TokenType> token_types;  // [num_tokens]; empty means all kNormal
  std::vector<std::string> merges;     // BPE merges "left right", in priority order

  std::optional<TokenId> bos_id;
  std::optional<TokenId> eos_id;
  std::optional<TokenId> eot_id;  // end of turn (Llama 3 <|eot_id|>, Qwen <|im_end|>)
  std::optional<TokenId> eom_id;
  std::optional<TokenId> unk_id;
  std::optional<TokenId> pad_id;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = true;  // SPM: prepend a space to the text before encoding
  std::string chat_template;     // `tokenizer.chat_template` (Jinja source), may be empty

  size_t num_tokens() const { return tokens.size(); }
  TokenType type_of(TokenId id) const {
    return token_types.empty() ? TokenType::kNormal : token_types[static_cast<size_t>(id)];
  }

  // Checks internal consistency: array lengths, ids in range. Errors: Corrupt.
  Status Validate() const;
};

// Whether a vocabulary adds BOS when its GGUF does not say (`tokenizer.ggml.add_bos_token`
// absent), as llama.cpp decides: SPM yes; byte-level BPE only for the Llama 3 family of
// pre-tokenizers ("llama3", "llama-bpe", ...), not for "qwen2", "gpt2", "smollm", "default".
bool DefaultAddBos(VocabKind kind, std::string_view pre);

// Reads the vocabulary from GGUF metadata. For SPM vocabularies that name no BOS, EOS or
// unknown token, ids 1, 2 and 0 are assumed (llama.cpp's defaults). A special token id of -1
// (or 0xFFFFFFFF) means "none". A BOS, EOS or unknown id outside the vocabulary is Corrupt
// (encoding and stopping depend on them); an EOT, EOM or padding id outside it is dropped with
// a warning (the model works without them). Errors: NotFound (no tokenizer), Corrupt
// (inconsistent arrays or ids), Unimplemented (a tokenizer model we do not support).
Result<Vocab> ReadVocabFromGguf(const gguf::GgufFile& file);

// Writes `vocab` as `tokenizer.*` metadata, the way llama.cpp's converters do.
void WriteVocabToGguf(const Vocab& vocab, gguf::GgufWriter& writer);

}  // namespace reprise::tokenizer
