// Test helper of the workload tests: a whitespace word count standing in for a tokenizer.
#pragma once

#include <cctype>
#include <string_view>

namespace reprise::workload::test_util {

inline int CountWords(std::string_view text) {
  int count = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++count;
    in_word = !space;
  }
  return count;
}

}  // namespace reprise::workload::test_util
