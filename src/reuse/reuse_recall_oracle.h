// ReuseRecallOracle: how many tokens of a prompt a cache that had seen every earlier prompt
// could reuse at best — the denominator of "reuse recall" (benchmarks only).
//
// A token counts as reusable when a window of `window` consecutive tokens that holds it
// occurred, anywhere, in an earlier prompt given to Add (or a segment warmed into the cache).
// That is what an ideal matcher with spans of at least `window` tokens (the planner's
// min_match_tokens) could find, whatever the chunk boundaries, candidate limits or eviction.
// Windows are kept as 64-bit hashes: memory grows with the tokens seen (8-16 bytes each).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

namespace reprise::reuse {

class ReuseRecallOracle {
 public:
  // Requires window >= 1.
  explicit ReuseRecallOracle(int window) : window_(window < 1 ? 1 : window) {}

  // Tokens of `prompt` covered by a window seen in an earlier Add. A prompt shorter than the
  // window has none.
  int CountReusable(std::span<const int32_t> prompt) const;
  // The same, token by token: 1 where a token is reusable ([prompt length]).
  std::vector<uint8_t> ReusableMask(std::span<const int32_t> prompt) const;
  // Remembers every window of `tokens`.
  void Add(std::span<const int32_t> tokens);

  int window() const { return window_; }
  size_t num_windows() const { return seen_.size(); }

 private:
  uint64_t WindowHash(std::span<const int32_t> tokens, size_t begin) const;

  int window_;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace reprise::reuse
