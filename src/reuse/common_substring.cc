#include "reuse/common_substring.h"

#include <algorithm>
#include <bit>

#include "base/check.h"

namespace reprise::reuse {

int32_t SuffixAutomaton::AddState(int32_t length, int32_t link, int32_t first_end) {
  len_.push_back(length);
  link_.push_back(link);
  first_end_.push_back(first_end);
  first_edge_.push_back(-1);
  return static_cast<int32_t>(len_.size()) - 1;
}

void SuffixAutomaton::ResetTable(int min_slots) {
  const size_t num_slots = std::bit_ceil(static_cast<size_t>(std::max(min_slots, 16)));
  slots_.assign(num_slots, Slot{-1, 0, 0});
  hash_shift_ = 64 - std::countr_zero(num_slots);
  num_transitions_ = 0;
}

// Fibonacci hashing of the 64-bit key (state, token): the top bits of the product depend on
// every bit of the key, and linear probing behaves well on them.
size_t SuffixAutomaton::SlotIndex(int32_t state, int32_t token) const {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | static_cast<uint32_t>(token);
  const size_t mask = slots_.size() - 1;
  size_t index = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> hash_shift_);
  // The table is never more than half full, so this loop ends.
  while (true) {
    const Slot& slot = slots_[index];
    if (slot.state == -1 || (slot.state == state && slot.token == token)) return index;
    index = (index + 1) & mask;
  }
}

int32_t SuffixAutomaton::Find(int32_t state, int32_t token) const {
  const Slot& slot = slots_[SlotIndex(state, token)];
  return slot.state == -1 ? -1 : slot.target;
}

void SuffixAutomaton::Insert(size_t index, int32_t state, int32_t token, int32_t target) {
  REPRISE_DCHECK(slots_[index].state == -1);
  // SlotIndex's probing ends only because the table keeps an empty slot; Build sizes it so
  // that it stays at most half full.
  REPRISE_CHECK(2 * (static_cast<size_t>(num_transitions_) + 1) <= slots_.size());
  slots_[index] = Slot{state, token, target};
  ++num_transitions_;
  edge_token_.push_back(token);
  edge_next_.push_back(first_edge_[state]);
  first_edge_[state] = static_cast<int32_t>(edge_token_.size()) - 1;
}

void SuffixAutomaton::Build(std::span<const int32_t> text) {
  REPRISE_CHECK(text.size() < (size_t{1} << 28)) << "text too long: " << text.size();
  const int n = static_cast<int>(text.size());
  text_length_ = n;
  len_.clear();
  link_.clear();
  first_end_.clear();
  first_edge_.clear();
  edge_token_.clear();
  edge_next_.clear();
  const size_t max_states = 2 * static_cast<size_t>(n) + 1;
  len_.reserve(max_states);
  link_.reserve(max_states);
  first_end_.reserve(max_states);
  first_edge_.reserve(max_states);
  edge_token_.reserve(3 * static_cast<size_t>(n) + 3);
  edge_next_.reserve(3 * static_cast<size_t>(n) + 3);
  // A suffix automaton has at most 3n - 4 transitions for n >= 3 (and 3 for n = 2), so 6n
  // slots (at least 16) keep the table at most half full: it never needs to grow.
  ResetTable(6 * n);

  AddState(/*length=*/0, /*link=*/-1, /*first_end=*/-1);
  int32_t last = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t token = text[i];
    const int32_t cur = AddState(len_[last] + 1, -1, i);
    // Add (p, token) -> cur along the suffix links of `last` until a state already has a
    // transition on `token`; `slot` ends at that transition, if any.
    int32_t p = last;
    size_t slot = 0;
    while (p != -1) {
      slot = SlotIndex(p, token);
      if (slots_[slot].state != -1) break;
      Insert(slot, p, token, cur);
      p = link_[p];
    }
    if (p == -1) {
      link_[cur] = 0;
    } else {
      const int32_t q = slots_[slot].target;
      if (len_[p] + 1 == len_[q]) {
        link_[cur] = q;
      } else {
        // Split q: the shorter strings of q (length <= len[p] + 1) now also end at i, so they
        // move to a clone with q's transitions and q's first end position (the clone's end
        // positions are q's plus i > every one of them).
        const int32_t clone = AddState(len_[p] + 1, link_[q], first_end_[q]);
        for (int32_t e = first_edge_[q]; e != -1; e = edge_next_[e]) {
          const int32_t edge_token = edge_token_[e];
          const int32_t target = Find(q, edge_token);
          Insert(SlotIndex(clone, edge_token), clone, edge_token, target);
        }
        // Redirect to the clone the transitions on `token` that went to q.
        while (p != -1) {
          Slot& transition = slots_[SlotIndex(p, token)];
          if (transition.state == -1 || transition.target != q) break;
          transition.target = clone;
          p = link_[p];
        }
        link_[q] = clone;
        link_[cur] = clone;
      }
    }
    last = cur;
  }
}

CommonSubstring SuffixAutomaton::Match(std::span<const int32_t> query,
                                       MatchTieBreak tie_break) const {
  CommonSubstring best;
  if (len_.empty()) return best;  // never built
  int best_text_end = 0;
  // Invariant: after query[j], `state` is the automaton state of the longest suffix of
  // query[0, j] that occurs in the text, and `length` is that suffix's length.
  int32_t state = 0;
  int length = 0;
  const int m = static_cast<int>(query.size());
  for (int j = 0; j < m; ++j) {
    const int32_t token = query[j];
    int32_t next = Find(state, token);
    while (next == -1 && state != 0) {
      state = link_[state];
      length = len_[state];
      next = Find(state, token);
    }
    if (next == -1) {  // token absent from the text
      state = 0;
      length = 0;
      continue;
    }
    state = next;
    ++length;
    // Every longest common substring, wherever it ends in the query, is the matched suffix
    // at that end (the suffix cannot be longer than the maximum), so this sees all of them.
    const int text_end = first_end_[state];
    const bool better = length > best.length || (tie_break == MatchTieBreak::kEarliestTextEnd &&
                                                 length == best.length && text_end < best_text_end);
    if (better) {
      best.length = length;
      best.a_begin = text_end - length + 1;
      best.b_begin = j - length + 1;
      best_text_end = text_end;
    }
  }
  return best;
}

CommonSubstring LongestCommonSubstring(std::span<const int32_t> a, std::span<const int32_t> b) {
  SuffixAutomaton automaton;
  if (a.size() <= b.size()) {
    automaton.Build(a);
    return automaton.Match(b, MatchTieBreak::kEarliestQueryEnd);
  }
  automaton.Build(b);
  const CommonSubstring swapped = automaton.Match(a, MatchTieBreak::kEarliestTextEnd);
  return CommonSubstring{swapped.length, swapped.b_begin, swapped.a_begin};
}

}  // namespace reprise::reuse
