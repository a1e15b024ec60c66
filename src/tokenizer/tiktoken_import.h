// Builds a byte-level BPE Vocab from a tiktoken rank file (the "tokenizer.model" of Llama 3,
// the "qwen.tiktoken" of Qwen), so that these models' tokenizers can be written to GGUF and
// run by BpeEncoder.
//
// A tiktoken file lists "base64(token bytes) rank" per line. GGUF wants token texts in GPT-2's
// byte-to-unicode form plus an ordered merge list, so the merges are recovered from the ranks
// (see MergeRecovery: for Qwen, BPE is replayed on each token's bytes with the lower ranks
// and the last two parts form its merge; for Llama 3 every two-part split is listed, as in
// its Hugging Face tokenizer). Merges are listed in the order of their token's rank. The
// family adds the
// special tokens, their types, BOS/EOS/EOT, the pre-tokenizer name and a chat template.
// Padding the vocabulary to the model's embedding size is the caller's job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace reprise::tokenizer {

enum class TiktokenFamily {
  // Llama 3 / 3.1 / 3.2: 128000 ranks, 256 specials from 128000 (<|begin_of_text|>,
  // <|end_of_text|>, ..., <|eot_id|> 128009, then <|reserved_special_token_N|>); pre
  // "llama-bpe"; BOS 128000 added; EOS 128001, EOT 128009, EOM 128008.
  kLlama3,
  // Qwen2 / Qwen2.5 / Qwen3: 151643 ranks, specials 151643..151668 (<|endoftext|>,
  // <|im_start|>, <|im_end|>, ..., <think>, </think>); pre "qwen2"; no BOS added;
  // EOS <|endoftext|> 151643, EOT <|im_end|> 151645.
  kQwen,
};

// Reads a tiktoken file and builds the family's vocabulary. Errors: NotFound, IoError,
// Corrupt (bad base64, duplicate or missing ranks, a rank count that is not the family's).
Result<Vocab> VocabFromTiktoken(const std::string& path, TiktokenFamily family);

// The parts of VocabFromTiktoken, for tests and other families.

// Parses tiktoken text into token bytes indexed by rank. Errors: Corrupt.
Result<std::vector<std::string>> ParseTiktokenRanks(std::string_view contents);

// How merges are recovered from ranks. Both give lists in the order of the merged token's
// rank, and both make BPE reproduce tiktoken on ordinary text; they differ in which merges
// are listed, and each family uses the one its published Hugging Face tokenizer has, so that
// our GGUF files match the ones llama.cpp's converter writes.
enum class MergeRecovery {
  // One merge per token: replay BPE on the token's bytes with the ranks below its own and
  // take the two parts it ends with. Tokens BPE cannot reach that way get no merge. Qwen's
  // merges.txt is this list (151387 merges).
  kReplay,
  // Every split of a token into two ranked tokens, ordered by the token's rank and then by
  // the parts' ranks (transformers' TikTokenConverter; Llama 3's tokenizer.json, 280147
  // merges).
  kAllSplits,
};

// Recovers the merges ("left right" in GPT-2 text, in rank order) from token bytes indexed by
// rank.
std::vector<std::string> MergesFromRanks(const std::vector<std::string>& ranked_bytes,
                                         MergeRecovery recovery = MergeRecovery::kReplay);

}  // namespace reprise::tokenizer
