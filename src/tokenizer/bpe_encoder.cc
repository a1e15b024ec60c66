#include "tokenizer/bpe_encoder.h"

#include <algorithm>

#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Orders the heap so that the lowest rank, then the leftmost pair, comes out first.
struct CandidateAfter {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

bool IsControlLike(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUnknown;
}

}  // namespace

BpeEncoder::BpeEncoder(const Vocab& vocab, PreTokenizer pre_tokenizer)
    : vocab_(&vocab), pre_tokenizer_(std::move(pre_tokenizer)) {}

int32_t BpeEncoder::SymbolFor(std::string_view gpt2_text,
                              std::unordered_map<std::string, int32_t>& extra_index) {
  auto it = text_to_id_.find(gpt2_text);
  if (it != text_to_id_.end()) return it->second;
  auto [extra, inserted] = extra_index.try_emplace(
      std::string(gpt2_text),
      static_cast<int32_t>(vocab_->num_tokens() + extra_symbol_bytes_.size()));
  if (inserted) extra_symbol_bytes_.push_back(Gpt2TextToBytes(gpt2_text));
  return extra->second;
}

Result<BpeEncoder> BpeEncoder::Create(const Vocab& vocab) {
  REPRISE_ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer, PreTokenizer::Create(vocab.pre));
  BpeEncoder encoder(vocab, std::move(pre_tokenizer));
  encoder.text_to_id_.reserve(vocab.num_tokens());
  for (size_t id = 0; id < vocab.num_tokens(); ++id) {
    encoder.text_to_id_[vocab.tokens[id]] = static_cast<TokenId>(id);
  }
  std::unordered_map<std::string, int32_t> extra_index;
  for (int b = 0; b < 256; ++b) {
    encoder.byte_symbol_[b] =
        encoder.SymbolFor(ByteToGpt2Char(static_cast<uint8_t>(b)), extra_index);
  }
  encoder.merges_.reserve(vocab.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& line = vocab.merges[rank];
    // The separator is the first space after the first character (a left part cannot be
    // empty; GPT-2 texts contain no spaces).
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) {
      return CorruptError("BPE merge " + std::to_string(rank) + " ('" + line +
                          "') has no space between its two parts");
    }
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t left_symbol = encoder.SymbolFor(left, extra_index);
    const int32_t right_symbol = encoder.SymbolFor(right, extra_index);
    const int32_t result = encoder.SymbolFor(joined, extra_index);
    // The first occurrence of a pair keeps its rank.
    encoder.merges_.try_emplace(PairKey(left_symbol, right_symbol),
                                Merge{static_cast<int32_t>(rank), result});
  }
  return encoder;
}

void BpeEncoder::Encode(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<std::string_view> words;
  pre_tokenizer_.Split(text, words);
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  for (std::string_view word : words) EncodeWord(word, symbols, heap, out);
}

void BpeEncoder::PushCandidate(const std::vector<Symbol>& symbols, int32_t left,
                               std::vector<Candidate>& heap) const {
  if (left < 0) return;
  const int32_t right = symbols[left].next;
  if (right < 0) return;
  auto it = merges_.find(PairKey(symbols[left].id, symbols[right].id));
  if (it == merges_.end()) return;
  heap.push_back(Candidate{it->second.rank, left, right, symbols[left].id, symbols[right].id,
                           it->second.result});
  std::push_heap(heap.begin(), heap.end(), CandidateAfter());
}

void BpeEncoder::EmitSymbol(int32_t symbol_id, std::vector<TokenId>& out) const {
  const auto num_tokens = static_cast<int32_t>(vocab_->num_tokens());
  if (symbol_id < num_tokens) {
    out.push_back(symbol_id);
    return;
  }
  // A merge result that is not a token: fall back to the tokens of its bytes.
  for (char c : extra_symbol_bytes_[symbol_id - num_tokens]) {
    const int32_t byte_symbol = byte_symbol_[static_cast<uint8_t>(c)];
    if (byte_symbol < num_tokens) {
      out.push_back(byte_symbol);
    } else if (vocab_->unk_id) {
      out.push_back(*vocab_->unk_id);
    }
  }
}

void BpeEncoder::EncodeWord(std::string_view word, std::vector<Symbol>& symbols,
                            std::vector<Candidate>& heap, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    EmitSymbol(byte_symbol_[static_cast<uint8_t>(word[0])], out);
    return;
  }
  if (pre_tokenizer_.ignore_merges()) {
    auto it = text_to_id_.find(BytesToGpt2Text(word));
    if (it != text_to_id_.end() && !IsControlLike(vocab_->type_of(it->second))) {
      out.push_back(it->second);
      return;
    }
  }
  const auto num_symbols = static_cast<int32_t>(word.size());
  symbols.resize(word.size());
  for (int32_t i = 0; i < num_symbols; ++i) {
    symbols[i] = Symbol{byte_symbol_[static_cast<uint8_t>(word[i])], i - 1,
                        i + 1 < num_symbols ? i + 1 : -1, 1};
  }
  heap.clear();
  for (int32_t i = 0; i + 1 < num_symbols; ++i) PushCandidate(symbols, i, heap);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateAfter());
    const Candidate candidate = heap.back();
    heap.pop_back();
    Symbol& left = symbols[candidate.left];
    // Skip pairs that went stale: a side was merged away or changed since the push.
    if (left.num_bytes == 0 || left.next != candidate.right || left.id != candidate.left_id) {
      continue;
    }
    Symbol& right = symbols[candidate.right];
    if (right.num_bytes == 0 || right.id != candidate.right_id) continue;

    left.id = candidate.result;
    left.num_bytes += right.num_bytes;
    right.num_bytes = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    PushCandidate(symbols, left.prev, heap);
    PushCandidate(symbols, candidate.left, heap);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) EmitSymbol(symbols[i].id, out);
}

}  // namespace reprise::tokenizer
