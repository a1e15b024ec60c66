// Keyword queries for the catalog's FTS5 index: split free text into words and quote them so
// that nothing in a user's text is read as FTS5 query syntax (AND, OR, NOT, NEAR, quotes,
// '*', ':', '^', parentheses, column filters).
//
// Words are runs of ASCII letters and digits and of non-ASCII bytes (UTF-8 sequences, which
// FTS5's unicode61 tokenizer splits further where they hold separators); ASCII is lowercased.
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace reprise::store {

// The distinct words of `text`, in order of first appearance, each at most `max_word_bytes`
// long (longer runs are cut) and at least `min_ascii_word_bytes` long when pure ASCII.
std::vector<std::string> SplitQueryWords(std::string_view text, size_t min_ascii_word_bytes = 2,
                                         size_t max_word_bytes = 64);

// `word` as an FTS5 string: wrapped in double quotes, inner quotes doubled.
std::string QuoteFtsTerm(std::string_view word);

// Whether every byte of `word` is ASCII.
bool IsAsciiWord(std::string_view word);

}  // namespace reprise::store
