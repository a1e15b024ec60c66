#include "tokenizer/spm_encoder.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

// Highest score first; among equal scores the leftmost pair.
struct BigramAfter {
  template <typename B>
  bool operator()(const B& a, const B& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

bool IsMergeable(TokenType type) {
  return type == TokenType::kNormal || type == TokenType::kUserDefined ||
         type == TokenType::kUndefined;
}

}  // namespace

Result<SpmEncoder> SpmEncoder::Create(const Vocab& vocab) {
  SpmEncoder encoder(vocab);
  encoder.byte_tokens_.fill(-1);
  encoder.piece_to_id_.reserve(vocab.num_tokens());
  std::unordered_map<std::string_view, TokenId> any_type;
  for (size_t i = 0; i < vocab.num_tokens(); ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string& text = vocab.tokens[i];
    if (IsMergeable(vocab.type_of(id))) encoder.piece_to_id_[text] = id;
    any_type[text] = id;
  }
  // Byte fallback pieces are found by their text, whatever their type, as llama.cpp does.
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = any_type.find(name);
    if (it != any_type.end()) encoder.byte_tokens_[b] = it->second;
  }
  return encoder;
}

TokenId SpmEncoder::FindPiece(std::string_view text) const {
  auto it = piece_to_id_.find(text);
  return it == piece_to_id_.end() ? -1 : it->second;
}

void SpmEncoder::TryAddBigram(std::string_view text, const std::vector<Symbol>& symbols,
                              int32_t left, std::vector<Bigram>& heap) const {
  if (left < 0) return;
  const int32_t right = symbols[left].next;
  if (right < 0) return;
  const size_t num_bytes = symbols[left].num_bytes + symbols[right].num_bytes;
  const TokenId id = FindPiece(text.substr(symbols[left].offset, num_bytes));
  if (id < 0) return;
  const float score = vocab_->scores.empty() ? 0.0f : vocab_->scores[id];
  heap.push_back(Bigram{score, left, right, num_bytes});
  std::push_heap(heap.begin(), heap.end(), BigramAfter());
}

void SpmEncoder::EmitSymbol(std::string_view piece, std::vector<TokenId>& out) const {
  const TokenId id = FindPiece(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  const bool has_all_bytes = std::all_of(piece.begin(), piece.end(), [&](char c) {
    return byte_tokens_[static_cast<uint8_t>(c)] >= 0;
  });
  if (has_all_bytes) {
    for (char c : piece) out.push_back(byte_tokens_[static_cast<uint8_t>(c)]);
  } else if (vocab_->unk_id) {
    out.push_back(*vocab_->unk_id);
  }
}

void SpmEncoder::Encode(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t length = std::max<size_t>(1, ValidUtf8SequenceLength(text, offset));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        Symbol{index - 1, offset + length < text.size() ? index + 1 : -1, offset, length});
    offset += length;
  }
  std::vector<Bigram> heap;
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) {
    TryAddBigram(text, symbols, i, heap);
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramAfter());
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Stale when either side has been merged since the bigram was queued.
    if (left.num_bytes == 0 || right.num_bytes == 0 ||
        left.num_bytes + right.num_bytes != bigram.num_bytes || left.next != bigram.right) {
      continue;
    }
    left.num_bytes += right.num_bytes;
    right.num_bytes = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    TryAddBigram(text, symbols, left.prev, heap);
    TryAddBigram(text, symbols, bigram.left, heap);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    EmitSymbol(text.substr(symbols[i].offset, symbols[i].num_bytes), out);
  }
}

}  // namespace reprise::tokenizer
