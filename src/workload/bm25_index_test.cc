#include "workload/bm25_index.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace reprise::workload {
namespace {

std::vector<int> Indices(const std::vector<Bm25Hit>& hits) {
  std::vector<int> indices;
  for (const Bm25Hit& hit : hits) indices.push_back(hit.chunk_index);
  return indices;
}

TEST(RetrievalTermsTest, LowercasesSplitsAndDropsStopWords) {
  EXPECT_EQ(RetrievalTerms("The Cat's 3 hats, in Zürich!"),
            (std::vector<std::string>{"cat", "s", "3", "hats", "zürich"}));
  EXPECT_EQ(RetrievalTerms("  --  "), std::vector<std::string>{});
  EXPECT_EQ(RetrievalTerms("Who was the first?"), std::vector<std::string>{"first"});
}

TEST(RetrievalTermsTest, StopWordList) {
  for (std::string_view word : {"a", "the", "of", "who", "what", "was", "and", "about", "which"}) {
    EXPECT_TRUE(IsStopWord(word)) << word;
  }
  for (std::string_view word : {"cat", "kansas", "", "zzz", "aa", "whom"}) {
    EXPECT_FALSE(IsStopWord(word)) << word;
  }
}

TEST(Bm25IndexTest, RanksByTermFrequencyAndLength) {
  Bm25Index index;
  EXPECT_EQ(index.Add("dogs bark loudly at night"), 0);
  EXPECT_EQ(index.Add("cat cat cat sleeps"), 1);
  EXPECT_EQ(index.Add("a cat sleeps on the mat near the window of the house today"), 2);
  EXPECT_EQ(index.Add("cat"), 3);
  EXPECT_EQ(index.num_chunks(), 4);
  // More occurrences beat fewer; at equal tf the shorter chunk wins.
  std::vector<Bm25Hit> hits = index.TopK("cat", 10);
  EXPECT_EQ(Indices(hits), (std::vector<int>{1, 3, 2}));
  for (const Bm25Hit& hit : hits) EXPECT_GT(hit.score, 0);
  EXPECT_GT(hits[0].score, hits[1].score);
  EXPECT_GT(hits[1].score, hits[2].score);
  EXPECT_EQ(Indices(index.TopK("cat", 2)), (std::vector<int>{1, 3}));
  EXPECT_TRUE(index.TopK("cat", 0).empty());
  EXPECT_TRUE(index.TopK("giraffe", 5).empty());
  EXPECT_TRUE(index.TopK("the of", 5).empty());  // stop words only
}

TEST(Bm25IndexTest, RareTermsWeighMoreThanCommonOnes) {
  Bm25Index index;
  index.Add("river river bank");     // 0: the common term twice
  index.Add("river delta");          // 1
  index.Add("river mouth");          // 2
  index.Add("zebra crossing town");  // 3: the rare term once
  std::vector<Bm25Hit> hits = index.TopK("river zebra", 4);
  ASSERT_EQ(hits.size(), 4u);
  EXPECT_EQ(hits[0].chunk_index, 3);
  EXPECT_EQ(hits[1].chunk_index, 0);
}

TEST(Bm25IndexTest, ScoreMatchesTheFormula) {
  Bm25Index index({.k1 = 1.2, .b = 0.75});
  index.Add("apple banana");        // 2 terms
  index.Add("apple apple cherry");  // 3 terms
  index.Add("durian");              // 1 term
  // "apple" in chunk 1: N = 3, n = 2, tf = 2, |d| = 3, avgdl = 2.
  const double idf = std::log(1.0 + (3.0 - 2.0 + 0.5) / (2.0 + 0.5));
  const double expected = idf * 2.0 * 2.2 / (2.0 + 1.2 * (1.0 - 0.75 + 0.75 * 3.0 / 2.0));
  std::vector<Bm25Hit> hits = index.TopK("Apple", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].chunk_index, 1);
  EXPECT_NEAR(hits[0].score, expected, 1e-12);
  // A repeated query term counts once.
  EXPECT_DOUBLE_EQ(index.TopK("apple apple APPLE", 1)[0].score, hits[0].score);
}

TEST(Bm25IndexTest, TiesGoToTheLowerIndex) {
  Bm25Index index;
  index.Add("unrelated words here");
  index.Add("solar panel output");
  index.Add("solar panel output");
  index.Add("output panel solar");  // same terms, other order: same score
  std::vector<Bm25Hit> hits = index.TopK("solar output", 3);
  EXPECT_EQ(Indices(hits), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(hits[0].score, hits[1].score);
  EXPECT_EQ(hits[1].score, hits[2].score);
  EXPECT_EQ(Indices(index.TopK("solar output", 2)), (std::vector<int>{1, 2}));
}

TEST(Bm25IndexTest, EmptyIndexAndEmptyChunks) {
  Bm25Index index;
  EXPECT_TRUE(index.TopK("anything", 3).empty());
  index.Add("");
  index.Add("the of and");
  EXPECT_TRUE(index.TopK("anything", 3).empty());
  index.Add("anything goes");
  EXPECT_EQ(Indices(index.TopK("anything", 3)), (std::vector<int>{2}));
}

}  // namespace
}  // namespace reprise::workload
