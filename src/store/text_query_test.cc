// Query words for the keyword index: splitting, lowercasing, deduplication and quoting.
#include "store/text_query.h"

#include <gtest/gtest.h>

namespace reprise::store {
namespace {

using Words = std::vector<std::string>;

TEST(TextQueryTest, SplitsOnPunctuationLowercasesAndDeduplicates) {
  EXPECT_EQ(SplitQueryWords("Hello, hello WORLD! a b2 x*y \"q\" NEAR(a b) col:val"),
            (Words{"hello", "world", "b2", "near", "col", "val"}));
  EXPECT_EQ(SplitQueryWords(""), Words{});
  EXPECT_EQ(SplitQueryWords("*** : \" ' ^ ( ) {} -"), Words{});
  EXPECT_EQ(SplitQueryWords("a b c", 1), (Words{"a", "b", "c"}));
}

TEST(TextQueryTest, KeepsUtf8WordsWholeAndCutsLongWordsOnABoundary) {
  EXPECT_EQ(SplitQueryWords("Crème brûlée"), (Words{"crème", "brûlée"}));
  EXPECT_EQ(SplitQueryWords("é"), Words{"é"});               // short non-ASCII words are kept
  const std::string long_word = std::string(63, 'a') + "é";  // 'é' straddles byte 64
  const Words cut = SplitQueryWords(long_word);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0], std::string(63, 'a'));
  EXPECT_EQ(SplitQueryWords(std::string(100, 'z'))[0].size(), 64u);
}

TEST(TextQueryTest, QuotesTerms) {
  EXPECT_EQ(QuoteFtsTerm("and"), "\"and\"");
  EXPECT_EQ(QuoteFtsTerm("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(QuoteFtsTerm(""), "\"\"");
  EXPECT_TRUE(IsAsciiWord("abc"));
  EXPECT_FALSE(IsAsciiWord("café"));
}

}  // namespace
}  // namespace reprise::store
