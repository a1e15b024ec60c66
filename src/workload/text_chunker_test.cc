#include "workload/text_chunker.h"

#include <gtest/gtest.h>

#include "workload/test_word_count.h"

#include <cctype>
#include <string>
#include <vector>

namespace reprise::workload {
namespace {

using test_util::CountWords;

// Not additive: a joined text costs more than its parts (one extra token per 4 words), so
// the packer's summed estimate is too low and its exact re-check must move units on.
int CountWordsWithOverhead(std::string_view text) {
  const int words = CountWords(text);
  return words + words / 4;
}

// The text of a chunk with every heading of `groups` and the suffix removed.
std::string StripFrame(std::string text, const std::vector<TextGroup>& groups,
                       const std::string& suffix) {
  if (!suffix.empty()) {
    EXPECT_TRUE(text.ends_with(suffix));
    text.resize(text.size() - suffix.size());
  }
  for (const TextGroup& group : groups) {
    if (group.heading.empty()) continue;
    for (size_t at = text.find(group.heading); at != std::string::npos;
         at = text.find(group.heading)) {
      text.erase(at, group.heading.size());
    }
  }
  return text;
}

std::string AllUnits(const std::vector<TextGroup>& groups) {
  std::string text;
  for (const TextGroup& group : groups) {
    for (const std::string& unit : group.units) text += unit;
  }
  return text;
}

std::vector<TextGroup> Sentences() {
  return {
      {"Title: Alpha\n",
       {"One two three four five.", " Six seven eight.", " Nine ten eleven twelve thirteen.",
        " Fourteen."}},
      {"Title: Beta\n", {"Short one.", " Another short sentence here."}},
  };
}

TEST(TextChunkerTest, RespectsTheLimitAndKeepsAllText) {
  const std::vector<TextGroup> groups = Sentences();
  for (int max_tokens : {4, 6, 9, 12, 100}) {
    ChunkingOptions options{.max_tokens = max_tokens, .suffix = "\n"};
    Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, options, CountWords);
    ASSERT_TRUE(chunks.ok()) << chunks.error().ToString();
    std::string rejoined;
    for (const TextChunk& chunk : *chunks) {
      EXPECT_LE(CountWords(chunk.text), max_tokens) << chunk.text;
      EXPECT_EQ(chunk.first_group, chunk.last_group);  // groups not mixed
      EXPECT_TRUE(chunk.text.starts_with(groups[static_cast<size_t>(chunk.first_group)].heading));
      rejoined += StripFrame(chunk.text, groups, "\n");
    }
    EXPECT_EQ(rejoined, AllUnits(groups)) << "max_tokens " << max_tokens;
  }
}

TEST(TextChunkerTest, CutsAtSentenceBoundariesWhenSentencesFit) {
  ChunkingOptions options{.max_tokens = 12, .suffix = "\n"};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(Sentences(), options, CountWords);
  ASSERT_TRUE(chunks.ok());
  // Alpha: 2 + 5 + 3 = 10 words, then 2 + 5 + 1 = 8; Beta: 2 + 2 + 4 = 8.
  ASSERT_EQ(chunks->size(), 3u);
  EXPECT_EQ((*chunks)[0].text, "Title: Alpha\nOne two three four five. Six seven eight.\n");
  EXPECT_EQ((*chunks)[1].text, "Title: Alpha\n Nine ten eleven twelve thirteen. Fourteen.\n");
  EXPECT_EQ((*chunks)[2].text, "Title: Beta\nShort one. Another short sentence here.\n");
  EXPECT_EQ((*chunks)[2].first_group, 1);
}

TEST(TextChunkerTest, SplitsALongSentenceBetweenWords) {
  std::vector<TextGroup> groups = {{"H\n", {"a b c d e f g h i j", " k"}}};
  ChunkingOptions options{.max_tokens = 4};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, options, CountWords);
  ASSERT_TRUE(chunks.ok());
  std::vector<std::string> texts;
  for (const TextChunk& chunk : *chunks) texts.push_back(chunk.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"H\na b c", "H\n d e f", "H\n g h i", "H\n j k"}));
}

TEST(TextChunkerTest, SplitsAnOverlongWordBetweenUtf8Characters) {
  // Counts bytes: the 8-byte word "ééaaéé" + 1 byte heading needs splitting by characters.
  auto count_bytes = [](std::string_view text) { return static_cast<int>(text.size()); };
  std::vector<TextGroup> groups = {{"#",
                                    {"\xC3\xA9\xC3\xA9"
                                     "aa\xC3\xA9\xC3\xA9"}}};
  ChunkingOptions options{.max_tokens = 4};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, options, count_bytes);
  ASSERT_TRUE(chunks.ok()) << chunks.error().ToString();
  std::string rejoined;
  for (const TextChunk& chunk : *chunks) {
    EXPECT_LE(chunk.text.size(), 4u);
    ASSERT_TRUE(chunk.text.starts_with("#"));
    // No chunk starts or ends inside a character.
    EXPECT_NE(static_cast<unsigned char>(chunk.text[1]) & 0xC0, 0x80);
    rejoined += chunk.text.substr(1);
  }
  EXPECT_EQ(rejoined, groups[0].units[0]);
}

TEST(TextChunkerTest, MixedGroupsRepeatTheHeadingOfAContinuedGroup) {
  std::vector<TextGroup> groups = {
      {"S1:\n", {"A: hi\n", "B: hello there\n", "A: how are you\n"}},
      {"S2:\n", {"B: fine\n", "A: good\n"}},
  };
  ChunkingOptions options{.max_tokens = 9, .allow_mixed_groups = true};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, options, CountWords);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 3u);
  EXPECT_EQ((*chunks)[0].text, "S1:\nA: hi\nB: hello there\n");
  EXPECT_EQ((*chunks)[1].text, "S1:\nA: how are you\nS2:\nB: fine\n");
  EXPECT_EQ((*chunks)[1].first_group, 0);
  EXPECT_EQ((*chunks)[1].last_group, 1);
  EXPECT_EQ((*chunks)[2].text, "S2:\nA: good\n");
  options.max_tokens = 20;
  chunks = PackIntoChunks(groups, options, CountWords);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 1u);
  EXPECT_EQ((*chunks)[0].text,
            "S1:\nA: hi\nB: hello there\nA: how are you\nS2:\nB: fine\nA: good\n");
}

TEST(TextChunkerTest, ExactRecountHoldsTheLimitForANonAdditiveCounter) {
  std::vector<TextGroup> groups = {{"", {}}};
  for (int i = 0; i < 40; ++i) groups[0].units.push_back(" w" + std::to_string(i) + " x");
  for (int max_tokens : {5, 7, 10, 16}) {
    ChunkingOptions options{.max_tokens = max_tokens};
    Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, options, CountWordsWithOverhead);
    ASSERT_TRUE(chunks.ok());
    std::string rejoined;
    for (const TextChunk& chunk : *chunks) {
      EXPECT_LE(CountWordsWithOverhead(chunk.text), max_tokens) << chunk.text;
      rejoined += chunk.text;
    }
    EXPECT_EQ(rejoined, AllUnits(groups));
  }
}

TEST(TextChunkerTest, EmptyGroupsAndUnitsGiveNoChunks) {
  std::vector<TextGroup> groups = {{"H\n", {}}, {"G\n", {"", ""}}};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, {.max_tokens = 5}, CountWords);
  ASSERT_TRUE(chunks.ok());
  EXPECT_TRUE(chunks->empty());
}

TEST(TextChunkerTest, HeadingTooLongIsInvalidArgument) {
  std::vector<TextGroup> groups = {{"a very long heading\n", {"x"}}};
  Result<std::vector<TextChunk>> chunks = PackIntoChunks(groups, {.max_tokens = 3}, CountWords);
  ASSERT_FALSE(chunks.ok());
  EXPECT_EQ(chunks.error().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(PackIntoChunks(groups, {.max_tokens = 0}, CountWords).ok());
}

TEST(TextChunkerTest, SplitLinesKeepsNewlines) {
  EXPECT_EQ(SplitLines(""), std::vector<std::string>{});
  EXPECT_EQ(SplitLines("a\n\nb"), (std::vector<std::string>{"a\n", "\n", "b"}));
  EXPECT_EQ(SplitLines("a\n"), (std::vector<std::string>{"a\n"}));
}

}  // namespace
}  // namespace reprise::workload
