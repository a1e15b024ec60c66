#include "engine/token_constraint.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace reprise::engine {
namespace {

// Characters when `bytes` are whole UTF-8 characters of plain string content (none of
// `"`, `\`, bytes below 0x20), else -1.
int32_t PlainCharacters(std::string_view bytes) {
  int32_t chars = 0;
  size_t i = 0;
  while (i < bytes.size()) {
    const uint8_t b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x20 || b == '"' || b == '\\') return -1;
    const std::optional<Utf8Lead> lead = ClassifyUtf8Lead(b);
    if (!lead) return -1;
    const size_t length = 1 + lead->num_continuation;
    if (i + length > bytes.size()) return -1;
    for (size_t k = 1; k < length; ++k) {
      const uint8_t c = static_cast<uint8_t>(bytes[i + k]);
      if (c < (k == 1 ? lead->first_lo : 0x80) || c > (k == 1 ? lead->first_hi : 0xBF)) return -1;
    }
    i += length;
    ++chars;
  }
  return chars;
}

}  // namespace

void TokenTrie::Insert(std::vector<Node>& trie, std::string_view bytes, int32_t token) {
  if (trie.empty()) trie.emplace_back();
  int32_t node = 0;
  for (const char c : bytes) {
    const uint8_t b = static_cast<uint8_t>(c);
    std::vector<std::pair<uint8_t, int32_t>>& children = trie[static_cast<size_t>(node)].children;
    auto it = std::find_if(children.begin(), children.end(),
                           [b](const auto& child) { return child.first == b; });
    if (it != children.end()) {
      node = it->second;
      continue;
    }
    const int32_t child = static_cast<int32_t>(trie.size());
    children.emplace_back(b, child);
    trie.emplace_back();  // invalidates `children`
    node = child;
  }
  trie[static_cast<size_t>(node)].tokens.push_back(token);
}

TokenTrie::TokenTrie(const tokenizer::Tokenizer& tokenizer)
    : vocab_size_(static_cast<int>(tokenizer.num_tokens())) {
  all_.emplace_back();
  not_plain_.emplace_back();
  for (int32_t id = 0; id < vocab_size_; ++id) {
    if (tokenizer.IsEndOfGeneration(id)) end_of_generation_.push_back(id);
    const tokenizer::TokenType type = tokenizer.vocab().type_of(id);
    if (tokenizer.IsSpecial(id) || type == tokenizer::TokenType::kUserDefined) continue;
    const std::string& bytes = tokenizer.TokenPiece(id);
    if (bytes.empty()) continue;
    Insert(all_, bytes, id);
    const int32_t chars = PlainCharacters(bytes);
    if (chars >= 0) {
      plain_.emplace_back(id, chars);
    } else {
      Insert(not_plain_, bytes, id);
    }
  }
}

JsonConstraint::JsonConstraint(JsonSchema schema, const TokenTrie& trie)
    : schema_(std::move(schema)),
      trie_(&trie),
      matcher_(schema_),
      allowed_(static_cast<size_t>(trie.vocab_size()), 0) {}

void JsonConstraint::Reset() { matcher_ = JsonMatcher(schema_); }

void JsonConstraint::Walk(const std::vector<TokenTrie::Node>& trie, int32_t node,
                          const JsonMatcher& state) {
  for (const auto& [byte, child] : trie[static_cast<size_t>(node)].children) {
    JsonMatcher next = state;
    if (!next.Advance(byte)) continue;
    for (const int32_t token : trie[static_cast<size_t>(child)].tokens) {
      allowed_[static_cast<size_t>(token)] = 1;
    }
    Walk(trie, child, next);
  }
}

bool JsonConstraint::Mask(std::span<const float> logits, std::vector<float>& masked) {
  REPRISE_CHECK(logits.size() == allowed_.size());
  std::fill(allowed_.begin(), allowed_.end(), 0);
  int64_t max_chars = -1;
  if (!matcher_.is_finished()) {
    if (matcher_.in_plain_string(&max_chars)) {
      for (const auto& [token, chars] : trie_->plain()) {
        if (max_chars < 0 || chars <= max_chars) allowed_[static_cast<size_t>(token)] = 1;
      }
      Walk(trie_->not_plain(), 0, matcher_);
    } else {
      Walk(trie_->all(), 0, matcher_);
    }
  }
  if (matcher_.is_accepting()) {
    for (const int32_t token : trie_->end_of_generation()) allowed_[static_cast<size_t>(token)] = 1;
  }
  masked.resize(logits.size());
  bool any = false;
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    masked[i] = allowed_[i] ? logits[i] : kRefused;
    any = any || allowed_[i];
  }
  return any;
}

void JsonConstraint::Accept(int32_t token, std::string_view bytes) {
  const std::span<const int32_t> ends = trie_->end_of_generation();
  if (std::find(ends.begin(), ends.end(), token) != ends.end()) return;  // generation ends
  const bool advanced = matcher_.Advance(bytes);
  REPRISE_CHECK(advanced);
}

}  // namespace reprise::engine
