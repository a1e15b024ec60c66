#include "store/text_query.h"

#include <unordered_set>

namespace reprise::store {
namespace {

bool IsWordByte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

}  // namespace

bool IsAsciiWord(std::string_view word) {
  for (const char c : word) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::vector<std::string> SplitQueryWords(std::string_view text, size_t min_ascii_word_bytes,
                                         size_t max_word_bytes) {
  std::vector<std::string> words;
  std::unordered_set<std::string> seen;
  size_t i = 0;
  while (i < text.size()) {
    if (!IsWordByte(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && IsWordByte(static_cast<unsigned char>(text[end]))) ++end;
    std::string word(text.substr(i, end - i));
    i = end;
    if (word.size() > max_word_bytes) {
      // Cut on a UTF-8 boundary so that the word stays valid text.
      size_t cut = max_word_bytes;
      while (cut > 0 && (static_cast<unsigned char>(word[cut]) & 0xc0) == 0x80) --cut;
      word.resize(cut);
    }
    for (char& c : word) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (word.empty() || (IsAsciiWord(word) && word.size() < min_ascii_word_bytes)) continue;
    if (seen.insert(word).second) words.push_back(std::move(word));
  }
  return words;
}

std::string QuoteFtsTerm(std::string_view word) {
  std::string out = "\"";
  for (const char c : word) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace reprise::store
