#include "reuse/common_substring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include "base/random.h"

namespace reprise::reuse {
namespace {

using Tokens = std::vector<int32_t>;

// The quadratic dynamic program: common[i][j] = length of the longest common suffix of
// a[0, i) and b[0, j). Of the longest common substrings it returns the one ending first in b,
// then (for that string) the first occurrence in a; with `text_end_first` the roles swap.
CommonSubstring ReferenceLcs(const Tokens& a, const Tokens& b, bool text_end_first = false) {
  const size_t n = a.size();
  const size_t m = b.size();
  std::vector<int> common((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> int& { return common[i * (m + 1) + j]; };
  int longest = 0;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      if (a[i - 1] == b[j - 1]) at(i, j) = at(i - 1, j - 1) + 1;
      longest = std::max(longest, at(i, j));
    }
  }
  if (longest == 0) return {};
  const size_t outer_size = text_end_first ? n : m;
  const size_t inner_size = text_end_first ? m : n;
  for (size_t outer = 1; outer <= outer_size; ++outer) {
    for (size_t inner = 1; inner <= inner_size; ++inner) {
      const size_t i = text_end_first ? outer : inner;
      const size_t j = text_end_first ? inner : outer;
      if (at(i, j) == longest) {
        return {longest, static_cast<int>(i) - longest, static_cast<int>(j) - longest};
      }
    }
  }
  return {};
}

Tokens RandomTokens(Random& random, int length, int alphabet, int32_t offset = 0) {
  Tokens tokens(static_cast<size_t>(length));
  for (int32_t& token : tokens) {
    token = offset + static_cast<int32_t>(random.NextBelow(static_cast<uint64_t>(alphabet)));
  }
  return tokens;
}

// The reported spans really are equal and inside both sequences.
void ExpectValidSpans(const Tokens& a, const Tokens& b, const CommonSubstring& found) {
  ASSERT_GE(found.length, 0);
  if (found.length == 0) {
    EXPECT_EQ(found.a_begin, 0);
    EXPECT_EQ(found.b_begin, 0);
    return;
  }
  ASSERT_GE(found.a_begin, 0);
  ASSERT_GE(found.b_begin, 0);
  ASSERT_LE(static_cast<size_t>(found.a_begin + found.length), a.size());
  ASSERT_LE(static_cast<size_t>(found.b_begin + found.length), b.size());
  EXPECT_TRUE(std::equal(a.begin() + found.a_begin, a.begin() + found.a_begin + found.length,
                         b.begin() + found.b_begin));
}

void ExpectMatchesReference(const Tokens& a, const Tokens& b) {
  const CommonSubstring found = LongestCommonSubstring(a, b);
  ExpectValidSpans(a, b, found);
  EXPECT_EQ(found, ReferenceLcs(a, b)) << "|a|=" << a.size() << " |b|=" << b.size();
}

TEST(CommonSubstringTest, EmptyInputs) {
  const Tokens empty;
  const Tokens some = {1, 2, 3};
  EXPECT_EQ(LongestCommonSubstring(empty, empty), CommonSubstring{});
  EXPECT_EQ(LongestCommonSubstring(empty, some), CommonSubstring{});
  EXPECT_EQ(LongestCommonSubstring(some, empty), CommonSubstring{});
  SuffixAutomaton never_built;
  EXPECT_EQ(never_built.Match(some), CommonSubstring{});
  SuffixAutomaton over_empty;
  over_empty.Build(empty);
  EXPECT_EQ(over_empty.num_states(), 1);
  EXPECT_EQ(over_empty.Match(some), CommonSubstring{});
}

TEST(CommonSubstringTest, NothingInCommon) {
  EXPECT_EQ(LongestCommonSubstring(Tokens{1, 2, 3}, Tokens{4, 5, 6, 7}), CommonSubstring{});
}

TEST(CommonSubstringTest, SmallExamplesWithLocations) {
  // "xabcy" vs "zzabcq": "abc" at 1 in a and 2 in b.
  EXPECT_EQ(LongestCommonSubstring(Tokens{9, 1, 2, 3, 8}, Tokens{7, 7, 1, 2, 3, 6}),
            (CommonSubstring{3, 1, 2}));
  // Two longest candidates, {1,2} and {5,6}: the one ending first in b ({5,6}) wins,
  // whichever sequence is shorter.
  EXPECT_EQ(LongestCommonSubstring(Tokens{1, 2, 0, 5, 6}, Tokens{5, 6, 4, 1, 2}),
            (CommonSubstring{2, 3, 0}));
  EXPECT_EQ(LongestCommonSubstring(Tokens{1, 2, 0, 5, 6, 0}, Tokens{5, 6, 4, 1, 2}),
            (CommonSubstring{2, 3, 0}));
  // A repeated string: its first occurrence in a is reported.
  EXPECT_EQ(LongestCommonSubstring(Tokens{4, 4, 1, 2, 1, 2}, Tokens{0, 1, 2, 0}),
            (CommonSubstring{2, 2, 1}));
}

TEST(CommonSubstringTest, ExtremeTokenIds) {
  const int32_t lo = std::numeric_limits<int32_t>::min();
  const int32_t hi = std::numeric_limits<int32_t>::max();
  const Tokens a = {lo, -1, 0, hi, 999999, -1};
  const Tokens b = {3, -1, 0, hi, 999999, 5, lo};
  EXPECT_EQ(LongestCommonSubstring(a, b), (CommonSubstring{4, 1, 1}));
}

TEST(CommonSubstringTest, IdenticalAndContained) {
  Random random(7);
  for (int length : {1, 2, 17, 100, 512}) {
    const Tokens a = RandomTokens(random, length, 50);
    EXPECT_EQ(LongestCommonSubstring(a, a), (CommonSubstring{length, 0, 0}));
    Tokens b = RandomTokens(random, 13, 1000, 1000);  // disjoint alphabet around a
    b.insert(b.begin() + 5, a.begin(), a.end());
    EXPECT_EQ(LongestCommonSubstring(a, b), (CommonSubstring{length, 0, 5}));
    EXPECT_EQ(LongestCommonSubstring(b, a), (CommonSubstring{length, 5, 0}));
  }
}

TEST(CommonSubstringTest, OneRepeatedToken) {
  const Tokens a(300, 42);
  const Tokens b(200, 42);
  EXPECT_EQ(LongestCommonSubstring(a, b), (CommonSubstring{200, 0, 0}));
  EXPECT_EQ(LongestCommonSubstring(b, a), (CommonSubstring{200, 0, 0}));
}

// Thousands of random pairs over small alphabets (long repeats, many ties) and large ones.
TEST(CommonSubstringTest, RandomAgainstQuadraticReference) {
  Random random(12345);
  for (int trial = 0; trial < 4000; ++trial) {
    const int alphabet = trial % 4 == 3 ? 1000000 : 1 + static_cast<int>(trial % 5);
    const int a_length = static_cast<int>(random.NextBelow(40));
    const int b_length = static_cast<int>(random.NextBelow(40));
    const Tokens a = RandomTokens(random, a_length, alphabet);
    const Tokens b = RandomTokens(random, b_length, alphabet);
    ExpectMatchesReference(a, b);
    if (HasFatalFailure()) return;
  }
}

// Large alphabet with a planted shared span, plus noise: the planted span (or something
// longer) is found at the right place.
TEST(CommonSubstringTest, PlantedSpansLargeAlphabet) {
  Random random(99);
  for (int trial = 0; trial < 300; ++trial) {
    Tokens a = RandomTokens(random, 1 + static_cast<int>(random.NextBelow(300)), 1000000);
    Tokens b = RandomTokens(random, 1 + static_cast<int>(random.NextBelow(300)), 1000000);
    const int span =
        1 + static_cast<int>(random.NextBelow(static_cast<uint64_t>(std::min(a.size(), b.size()))));
    const size_t a_at = random.NextBelow(a.size() - static_cast<size_t>(span) + 1);
    const size_t b_at = random.NextBelow(b.size() - static_cast<size_t>(span) + 1);
    std::copy(a.begin() + static_cast<std::ptrdiff_t>(a_at),
              a.begin() + static_cast<std::ptrdiff_t>(a_at) + span,
              b.begin() + static_cast<std::ptrdiff_t>(b_at));
    const CommonSubstring found = LongestCommonSubstring(a, b);
    EXPECT_GE(found.length, span);
    ExpectMatchesReference(a, b);
    if (HasFatalFailure()) return;
  }
}

// One automaton, many queries, both tie-breaks, and the size bounds of a suffix automaton.
TEST(CommonSubstringTest, ReusedAutomatonMatchesManyQueries) {
  Random random(2024);
  SuffixAutomaton automaton;
  for (int text_trial = 0; text_trial < 60; ++text_trial) {
    const int alphabet = text_trial % 3 == 0 ? 2 : (text_trial % 3 == 1 ? 6 : 100000);
    const Tokens text = RandomTokens(random, static_cast<int>(random.NextBelow(120)), alphabet);
    automaton.Build(text);
    const int n = static_cast<int>(text.size());
    EXPECT_EQ(automaton.text_length(), n);
    if (n >= 2) {
      EXPECT_LE(automaton.num_states(), 2 * n - 1);
    }
    if (n >= 3) {
      EXPECT_LE(automaton.num_transitions(), 3 * n - 4);
    }
    for (int query_trial = 0; query_trial < 20; ++query_trial) {
      const Tokens query = RandomTokens(random, static_cast<int>(random.NextBelow(150)), alphabet);
      const CommonSubstring query_first = automaton.Match(query);
      ExpectValidSpans(text, query, query_first);
      EXPECT_EQ(query_first, ReferenceLcs(text, query));
      const CommonSubstring text_first = automaton.Match(query, MatchTieBreak::kEarliestTextEnd);
      ExpectValidSpans(text, query, text_first);
      EXPECT_EQ(text_first, ReferenceLcs(text, query, /*text_end_first=*/true));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CommonSubstringTest, FullSizeChunks) {
  Random random(5);
  for (int alphabet : {3, 30, 32000}) {
    const Tokens a = RandomTokens(random, 512, alphabet);
    const Tokens b = RandomTokens(random, 512, alphabet);
    ExpectMatchesReference(a, b);
  }
}

// Prints the time of one 512 x 512 match (no assertion: timings are not tested).
TEST(CommonSubstringTest, ReportTiming512) {
  Random random(77);
  const Tokens a = RandomTokens(random, 512, 32000);
  Tokens b = RandomTokens(random, 512, 32000);
  std::copy(a.begin() + 100, a.begin() + 300, b.begin() + 200);
  constexpr int kRepeats = 500;
  int checksum = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) checksum += LongestCommonSubstring(a, b).length;
  const double free_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      kRepeats;
  SuffixAutomaton automaton;
  automaton.Build(a);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) automaton.Build(a);
  const double build_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      kRepeats;
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) checksum += automaton.Match(b).length;
  const double match_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      kRepeats;
  EXPECT_EQ(checksum, 2 * kRepeats * 200);
  std::printf("512x512 LCS: %.2f us (LongestCommonSubstring), %.2f us Build + %.2f us Match\n",
              free_us, build_us, match_us);
}

}  // namespace
}  // namespace reprise::reuse
