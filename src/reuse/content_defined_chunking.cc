#include "reuse/content_defined_chunking.h"

#include <algorithm>

namespace reprise::reuse {
namespace {

// Whether the kBreakHashTokens tokens ending at `end` (fewer at the start) select a cut.
bool HashSelects(std::span<const int32_t> tokens, size_t end, int one_in) {
  if (one_in <= 1) return true;
  uint64_t h = 0x84222325cbf29ce4ull;
  const size_t begin = end + 1 >= kBreakHashTokens ? end + 1 - kBreakHashTokens : 0;
  for (size_t i = begin; i <= end; ++i) {
    h = (h ^ static_cast<uint32_t>(tokens[i])) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return (h % static_cast<uint64_t>(one_in)) == 0;
}

}  // namespace

std::vector<int> ContentDefinedCuts(std::span<const int32_t> tokens,
                                    std::span<const TokenBreak> breaks,
                                    const ContentChunkingOptions& options) {
  std::vector<int> cuts;
  const size_t n = std::min(tokens.size(), breaks.size());
  const size_t min_tokens = static_cast<size_t>(std::max(1, options.min_tokens));
  const size_t max_tokens = std::max(min_tokens, static_cast<size_t>(std::max(1, options.max_tokens)));
  size_t start = 0;
  size_t i = 0;
  // The end of the chunk's last sentence end past min_tokens (a paragraph end there is cut at
  // once); 0 = none.
  size_t last_sentence = 0;
  while (i < n) {
    const size_t length = i - start + 1;
    const TokenBreak b = breaks[i];
    if (length >= min_tokens) {
      // A sentence cut is skipped when a paragraph ends within min_tokens: the piece left
      // before it could not be cut there (decided by the text that follows, not the offset).
      const auto paragraph_ends_soon = [&] {
        for (size_t j = i + 1; j < n && j < i + min_tokens; ++j) {
          if (breaks[j] == TokenBreak::kParagraph) return true;
        }
        return false;
      };
      if (b == TokenBreak::kParagraph ||
          (b == TokenBreak::kSentence && HashSelects(tokens, i, options.sentence_cut_one_in) &&
           !paragraph_ends_soon())) {
        cuts.push_back(static_cast<int>(i + 1));
        start = i + 1;
        last_sentence = 0;
        ++i;
        continue;
      }
      if (b == TokenBreak::kSentence) last_sentence = i + 1;
    }
    if (length == max_tokens) {
      const size_t cut = last_sentence != 0 ? last_sentence : i + 1;
      cuts.push_back(static_cast<int>(cut));
      start = cut;
      last_sentence = 0;
      i = cut;
      continue;
    }
    ++i;
  }
  if (start < n) cuts.push_back(static_cast<int>(n));
  return cuts;
}

}  // namespace reprise::reuse
