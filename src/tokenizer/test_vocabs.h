// Test helpers for the tokenizer tests: the real vocabularies of ../shared/data, loaded once
// per test process, and a reader for llama.cpp's tokenizer test vectors.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/tiktoken_import.h"
#include "tokenizer/tokenizer.h"

namespace reprise::tokenizer::testing {

// The tokenizer of a shared tiktoken file (Llama 3 or Qwen), built on first use and kept for
// the rest of the process. Requires: the file exists (check with REPRISE_REQUIRE_SHARED_FILE).
const Tokenizer& SharedTiktokenTokenizer(TiktokenFamily family);

// The tokenizer of models/stories260K/stories260K.gguf, built on first use. Requires: the
// file exists.
const Tokenizer& SharedStoriesTokenizer();

// One case of llama.cpp's models/ggml-vocab-*.gguf.inp/.out: an input text and the ids
// llama.cpp's reference tokenizer gives it (no BOS).
struct VocabTestCase {
  std::string text;
  std::vector<TokenId> ids;
};

// Splits the .inp file at "\n__ggml_vocab_test__\n" and pairs each text with a line of the
// .out file, as llama.cpp's test-tokenizer-0 does. Errors: NotFound, IoError, Corrupt.
Result<std::vector<VocabTestCase>> ReadLlamaCppVocabTests(const std::string& inp_path,
                                                          const std::string& out_path);

}  // namespace reprise::tokenizer::testing
