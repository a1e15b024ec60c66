// Content-defined chunk boundaries (issue 17): where a segment's tokens are cut into chunks,
// chosen by their content rather than by their offset, so that the same passage yields the
// same chunks — and the same content hashes, found whole by the hash index — wherever it
// appears in a prompt and whatever surrounds it.
//
// The caller says, per token, whether a paragraph (a line end, a chat template's turn marker)
// or a sentence ends after it. Scanning from the chunk's start, a chunk of at least
// min_tokens is cut
//   - after a paragraph end;
//   - after a sentence end whose last kHashTokens tokens hash to 0 modulo
//     sentence_cut_one_in (so long paragraphs are cut at sentence ends that depend only on
//     the local text: about one in sentence_cut_one_in), unless a paragraph ends within the
//     next min_tokens tokens (the rest of the paragraph could not be a chunk of its own);
// and a chunk that reaches max_tokens is cut after its last sentence end past min_tokens, else
// at max_tokens (the only offset-dependent cuts). After a cut, everything
// depends on the text from the cut on: two copies of a passage that both start after a cut
// (a paragraph end, with a chunk of at least min_tokens before it) are cut the same way, and
// copies that start elsewhere fall into step at their first common cut. (A passage after a
// piece shorter than min_tokens — a heading — shares its first chunk with that piece.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace reprise::reuse {

enum class TokenBreak : uint8_t { kNone, kSentence, kParagraph };

struct ContentChunkingOptions {
  // The planner's min_match_tokens: a shorter piece could not be matched on its own anyway.
  int min_tokens = 32;            // >= 1
  int max_tokens = 512;           // >= min_tokens
  int sentence_cut_one_in = 4;    // >= 1
};

inline constexpr int kBreakHashTokens = 8;

// The end offsets of the chunks of `tokens`, ascending; the last is tokens.size(). Empty for
// empty tokens. Every chunk but the last holds min_tokens to max_tokens tokens. Requires:
// breaks.size() == tokens.size() (the shorter decides); out-of-range options are clamped.
std::vector<int> ContentDefinedCuts(std::span<const int32_t> tokens,
                                    std::span<const TokenBreak> breaks,
                                    const ContentChunkingOptions& options);

}  // namespace reprise::reuse
