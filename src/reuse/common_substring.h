// Longest common token substring (docs/design.md §6 "Matching"; Algorithm 4 of the paper): finds
// the longest run of tokens that two sequences share, and where it sits in each, so that the
// matcher can reuse that span of a cached chunk's KV for a new prompt chunk.
//
// A SuffixAutomaton is built once over one sequence (the "text", usually a cached chunk of at
// most 512 tokens) and then matches any number of "query" sequences against it in time linear
// in the query. Token ids go up to ~1e6, so transitions are never dense per-state tables: they
// live in one flat open-addressing hash table keyed by (state, token), sized to the number of
// transitions (at most 3 * text length), so memory is independent of the vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace reprise::reuse {

// A common substring of two sequences a and b: a[a_begin, a_begin + length) equals
// b[b_begin, b_begin + length). length == 0 means there is none (both begins are then 0).
struct CommonSubstring {
  int length = 0;
  int a_begin = 0;
  int b_begin = 0;

  friend bool operator==(const CommonSubstring&, const CommonSubstring&) = default;
};

// Which of several equally long common substrings SuffixAutomaton::Match reports.
enum class MatchTieBreak : uint8_t {
  // The one that ends first in the query; of its occurrences in the text, the first.
  kEarliestQueryEnd,
  // The one that ends first in the text; of its occurrences in the query, the first.
  kEarliestTextEnd,
};

// The suffix automaton of one token sequence (the text): the minimal automaton accepting all
// of the text's substrings. Invariants, for every state v other than the root (state 0):
//   - v stands for the set of substrings with the same set of end positions in the text;
//     their lengths are exactly (len[link[v]], len[v]].
//   - first_end[v] is the smallest of those end positions (index of the last token).
//   - a transition (v, token) -> w exists iff some string s of v has s + token in the text,
//     and then w is the state of s + token (the same w for every s of v).
// At most 2n - 1 states and 3n - 4 transitions for a text of n >= 3 tokens.
//
// Memory is reused across Build calls; Match allocates nothing. Thread-compatible: concurrent
// Match calls on one automaton are safe, Build needs exclusive access.
class SuffixAutomaton {
 public:
  SuffixAutomaton() = default;

  // Replaces the automaton with the one of `text` (which is not retained). Linear time
  // (expected, as the transitions are hashed). Requires: text.size() < 2^28.
  void Build(std::span<const int32_t> text);

  // The longest common substring of the text (reported as `a`) and `query` (as `b`), located
  // in both; ties follow `tie_break`. O(|query|) expected time; allocates nothing.
  CommonSubstring Match(std::span<const int32_t> query,
                        MatchTieBreak tie_break = MatchTieBreak::kEarliestQueryEnd) const;

  int text_length() const { return text_length_; }
  int num_states() const { return static_cast<int>(len_.size()); }
  int num_transitions() const { return num_transitions_; }

 private:
  // One hashed transition; state == -1 marks an empty slot.
  struct Slot {
    int32_t state;
    int32_t token;
    int32_t target;
  };

  int32_t AddState(int32_t length, int32_t link, int32_t first_end);
  void ResetTable(int min_slots);
  size_t SlotIndex(int32_t state, int32_t token) const;  // matching or first empty slot
  int32_t Find(int32_t state, int32_t token) const;      // target, or -1 when absent
  // Adds a transition. Requires: `index` is the empty slot SlotIndex(state, token) returned.
  void Insert(size_t index, int32_t state, int32_t token, int32_t target);

  int text_length_ = 0;
  // Per state: [num_states]. len_[0] == 0 and link_[0] == -1 for the root.
  std::vector<int32_t> len_;
  std::vector<int32_t> link_;
  std::vector<int32_t> first_end_;
  // Per state, its outgoing tokens as a singly linked list over edge_token_/edge_next_
  // (-1 terminated). Needed only to copy a state's transitions when Build clones it.
  std::vector<int32_t> first_edge_;
  std::vector<int32_t> edge_token_;
  std::vector<int32_t> edge_next_;
  // Open addressing with linear probing, no deletions; size is a power of two >= 6n, so at
  // most half full.
  std::vector<Slot> slots_;
  int hash_shift_ = 64;  // 64 - log2(slots_.size())
  int num_transitions_ = 0;
};

// The longest common substring of a and b. The automaton is built over the shorter sequence
// (a when the lengths are equal) and the other one is streamed through it.
// Ties: of all longest common substrings, the one that ends first in b; of that string's
// occurrences in a, the first. The result is the same whichever sequence is shorter.
// Allocates the automaton each call; to match many sequences against one, keep a
// SuffixAutomaton instead.
CommonSubstring LongestCommonSubstring(std::span<const int32_t> a, std::span<const int32_t> b);

}  // namespace reprise::reuse
