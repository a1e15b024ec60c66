// Constrained decoding: at each step, the mask over the vocabulary of the tokens that keep the
// output valid against a JSON Schema (json_schema.h, json_matcher.h).
//
// TokenTrie is built once per tokenizer: every token's bytes in a byte trie, so that the mask
// walks each byte prefix shared by many tokens once, dropping whole subtrees at the first
// byte the grammar refuses; and, apart, the tokens that are plain string content (no quote,
// backslash or control byte; whole UTF-8 characters) with their length in characters, which
// inside a string are allowed by one pass over a list instead of a walk of most of the
// vocabulary. Special tokens never match; end-of-generation tokens are allowed exactly when
// the document is complete.
//
// TokenTrie is immutable and thread-safe; JsonConstraint (one per request) is
// thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/json_matcher.h"
#include "engine/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

class TokenTrie {
 public:
  explicit TokenTrie(const tokenizer::Tokenizer& tokenizer);

  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte, node
    std::vector<int32_t> tokens;                        // tokens whose bytes end here
  };
  const std::vector<Node>& all() const { return all_; }
  // The tokens that are not plain string content.
  const std::vector<Node>& not_plain() const { return not_plain_; }
  // Plain string content tokens and their characters.
  const std::vector<std::pair<int32_t, int32_t>>& plain() const { return plain_; }
  std::span<const int32_t> end_of_generation() const { return end_of_generation_; }
  int vocab_size() const { return vocab_size_; }

 private:
  static void Insert(std::vector<Node>& trie, std::string_view bytes, int32_t token);
  std::vector<Node> all_;
  std::vector<Node> not_plain_;
  std::vector<std::pair<int32_t, int32_t>> plain_;
  std::vector<int32_t> end_of_generation_;
  int vocab_size_ = 0;
};

class JsonConstraint {
 public:
  // Borrows `trie`, which must outlive it; owns the compiled schema.
  JsonConstraint(JsonSchema schema, const TokenTrie& trie);
  JsonConstraint(const JsonConstraint&) = delete;
  JsonConstraint& operator=(const JsonConstraint&) = delete;

  // Back to the start of a document (another choice of the same request).
  void Reset();

  // Writes `logits` with every token the grammar refuses at -inf into `masked`. Returns
  // false when no token is allowed (a dead end: generation must stop).
  bool Mask(std::span<const float> logits, std::vector<float>& masked);
  // Advances the grammar by `token`'s bytes. Requires: `token` was allowed by the last Mask.
  void Accept(int32_t token, std::string_view bytes);
  // The document is complete and nothing may follow.
  bool is_finished() const { return matcher_.is_finished(); }
  bool is_accepting() const { return matcher_.is_accepting(); }

  const JsonSchema& schema() const { return schema_; }

 private:
  void Walk(const std::vector<TokenTrie::Node>& trie, int32_t node, const JsonMatcher& state);

  JsonSchema schema_;
  const TokenTrie* trie_;
  JsonMatcher matcher_;
  std::vector<uint8_t> allowed_;  // [vocab]
};

}  // namespace reprise::engine
