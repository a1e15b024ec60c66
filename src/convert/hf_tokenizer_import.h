// Imports a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) as a GGUF Vocab.
//
// Two kinds are understood:
//  - SentencePiece-style BPE (model type BPE with byte_fallback, "▁" for spaces; Llama 2,
//    TinyStories): becomes an SPM ("llama") vocab. SentencePiece BPE models give each piece
//    the score -id (pieces are numbered in merge order), so that merging by score replays the
//    merges in order; we do the same.
//  - byte-level BPE (ByteLevel pre-tokenizer; Llama 3, Qwen2/3, SmolLM2): becomes a "gpt2"
//    vocab with its merges; the pre-tokenizer name is recognised from the Split regex.
// Added tokens keep their ids; special ones become control tokens.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {

// Reads `dir`/tokenizer.json and, when present, `dir`/tokenizer_config.json. `config` is the
// model's config.json (for bos/eos ids and the model type). `vocab_size` is the model's
// embedding row count: the vocab is padded to it with unused tokens.
// Errors: NotFound, Corrupt, Unimplemented (tokenizer kinds not listed above).
Result<tokenizer::Vocab> ImportHfTokenizer(const std::string& dir, const nlohmann::json& config,
                                           int vocab_size);

}  // namespace reprise::convert
