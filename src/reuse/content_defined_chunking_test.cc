#include "reuse/content_defined_chunking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "base/random.h"

namespace reprise::reuse {
namespace {

// Synthetic text: token 1 ends a sentence, token 2 ends a paragraph, others are words.
constexpr int32_t kPeriod = 1, kNewline = 2;

struct Text {
  std::vector<int32_t> tokens;
  std::vector<TokenBreak> breaks() const {
    std::vector<TokenBreak> b;
    for (int32_t t : tokens) {
      b.push_back(t == kNewline ? TokenBreak::kParagraph
                  : t == kPeriod ? TokenBreak::kSentence
                                 : TokenBreak::kNone);
    }
    return b;
  }
  void Append(const std::vector<int32_t>& more) {
    tokens.insert(tokens.end(), more.begin(), more.end());
  }
};

// A paragraph of sentences of 8-30 words, ending with a newline.
std::vector<int32_t> Paragraph(Random& random, int num_sentences) {
  std::vector<int32_t> p;
  for (int s = 0; s < num_sentences; ++s) {
    const int words = 8 + static_cast<int>(random.NextBelow(23));
    for (int w = 0; w < words; ++w) p.push_back(10 + static_cast<int32_t>(random.NextBelow(30000)));
    p.push_back(kPeriod);
  }
  p.push_back(kNewline);
  return p;
}

// The chunks (as token sequences) of `text` that lie inside [begin, end).
std::vector<std::vector<int32_t>> ChunksWithin(const Text& text, const std::vector<int>& cuts,
                                               int begin, int end) {
  std::vector<std::vector<int32_t>> out;
  int from = 0;
  for (int cut : cuts) {
    if (from >= begin && cut <= end) {
      out.emplace_back(text.tokens.begin() + from, text.tokens.begin() + cut);
    }
    from = cut;
  }
  return out;
}

TEST(ContentDefinedChunkingTest, APassageIsCutTheSameWayAtAnyOffsetAmongAnyNeighbours) {
  Random random(7);
  const ContentChunkingOptions options;  // 32..512, one sentence end in 4
  const std::vector<int32_t> passage = [&] {
    std::vector<int32_t> p = Paragraph(random, 30);  // ~600 tokens: cut inside too
    const std::vector<int32_t> second = Paragraph(random, 5);
    p.insert(p.end(), second.begin(), second.end());
    return p;
  }();
  std::vector<std::vector<int32_t>> reference;
  for (int trial = 0; trial < 20; ++trial) {
    Text text;
    const int before = static_cast<int>(random.NextBelow(4));
    for (int i = 0; i < before; ++i) {
      text.Append(Paragraph(random, 4 + static_cast<int>(random.NextBelow(8))));
    }
    const int begin = static_cast<int>(text.tokens.size());
    text.Append(passage);
    const int end = static_cast<int>(text.tokens.size());
    text.Append(Paragraph(random, 4));
    const std::vector<int> cuts = ContentDefinedCuts(text.tokens, text.breaks(), options);
    // The passage starts after a cut when what precedes it is a chunk of >= min_tokens
    // (always here: preceding paragraphs hold >= 4 sentences of >= 9 tokens) or nothing.
    std::vector<std::vector<int32_t>> chunks = ChunksWithin(text, cuts, begin, end);
    int covered = 0;
    for (const auto& c : chunks) covered += static_cast<int>(c.size());
    ASSERT_EQ(covered, end - begin) << "trial " << trial << ": the passage is not whole chunks";
    if (trial == 0) {
      reference = chunks;
      EXPECT_GE(reference.size(), 3u);  // the long paragraph was cut inside, at sentence ends
    } else {
      EXPECT_EQ(chunks, reference) << "trial " << trial;
    }
  }
}

TEST(ContentDefinedChunkingTest, CopiesStartingMidParagraphFallIntoStep) {
  Random random(8);
  const ContentChunkingOptions options;
  const std::vector<int32_t> passage = Paragraph(random, 40);
  Text a, b;
  a.Append(passage);
  // b holds the passage from its 37th token on, after other text.
  b.Append(Paragraph(random, 6));
  b.Append(std::vector<int32_t>(passage.begin() + 37, passage.end()));
  const std::vector<int> ca = ContentDefinedCuts(a.tokens, a.breaks(), options);
  const std::vector<int> cb = ContentDefinedCuts(b.tokens, b.breaks(), options);
  const int shift = static_cast<int>(a.tokens.size() - b.tokens.size());
  // Every cut of b inside the passage after its first one there is a cut of a.
  std::vector<int> a_set(ca.begin(), ca.end());
  int in_passage = 0, matched = 0;
  const int passage_start_in_b = static_cast<int>(b.tokens.size() - (passage.size() - 37));
  for (int cut : cb) {
    if (cut <= passage_start_in_b) continue;
    if (++in_passage == 1) continue;
    matched += std::find(a_set.begin(), a_set.end(), cut + shift) != a_set.end();
  }
  EXPECT_GE(in_passage, 3);
  EXPECT_EQ(matched, in_passage - 1);
}

TEST(ContentDefinedChunkingTest, SizesStayWithinBoundsAndCoverEverything) {
  Random random(9);
  const ContentChunkingOptions options{.min_tokens = 16, .max_tokens = 100, .sentence_cut_one_in = 4};
  Text text;
  for (int i = 0; i < 30; ++i) text.Append(Paragraph(random, 1 + static_cast<int>(random.NextBelow(10))));
  // A stretch without any break: cut at max_tokens.
  for (int i = 0; i < 350; ++i) text.tokens.push_back(100 + i);
  const std::vector<int> cuts = ContentDefinedCuts(text.tokens, text.breaks(), options);
  ASSERT_FALSE(cuts.empty());
  EXPECT_EQ(cuts.back(), static_cast<int>(text.tokens.size()));
  int from = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const int size = cuts[i] - from;
    EXPECT_LE(size, 100);
    if (i + 1 < cuts.size()) {
      EXPECT_GE(size, 16);
    }
    EXPECT_GT(size, 0);
    from = cuts[i];
  }
  EXPECT_TRUE(ContentDefinedCuts({}, {}, options).empty());
  const std::vector<int32_t> one = {5};
  const std::vector<TokenBreak> none = {TokenBreak::kNone};
  EXPECT_EQ(ContentDefinedCuts(one, none, options), std::vector<int>{1});
}

}  // namespace
}  // namespace reprise::reuse
