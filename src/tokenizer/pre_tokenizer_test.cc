#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace reprise::tokenizer {
namespace {

std::vector<std::string> Split(std::string_view pre, std::string_view text) {
  auto pre_tokenizer = PreTokenizer::Create(pre);
  EXPECT_TRUE(pre_tokenizer.ok()) << pre_tokenizer.status().ToString();
  if (!pre_tokenizer.ok()) return {};
  std::vector<std::string_view> words;
  pre_tokenizer->Split(text, words);
  return std::vector<std::string>(words.begin(), words.end());
}

using Words = std::vector<std::string>;

TEST(PreTokenizerTest, Llama3Words) {
  EXPECT_EQ(Split("llama-bpe", "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(Split("llama-bpe", "  Hello"), (Words{" ", " Hello"}));
  EXPECT_EQ(Split("llama-bpe", "don't STOP'S"), (Words{"don", "'t", " STOP", "'S"}));
  EXPECT_EQ(Split("llama-bpe", "x\n\n  y"), (Words{"x", "\n\n", " ", " y"}));
  EXPECT_EQ(Split("llama-bpe", "a  "), (Words{"a", "  "}));
  EXPECT_EQ(Split("llama-bpe", "(hi)!!"), (Words{"(hi", ")!!"}));
}

TEST(PreTokenizerTest, Llama3GroupsUpToThreeDigits) {
  EXPECT_EQ(Split("llama3", "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(Split("llama3", "x 42"), (Words{"x", " ", "42"}));
}

TEST(PreTokenizerTest, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(Split("qwen2", "1234"), (Words{"1", "2", "3", "4"}));
  EXPECT_EQ(Split("qwen2", "Hello world"), (Words{"Hello", " world"}));
}

TEST(PreTokenizerTest, Gpt2Pattern) {
  EXPECT_EQ(Split("gpt2", "Hello world 123!?"), (Words{"Hello", " world", " 123", "!?"}));
  EXPECT_EQ(Split("gpt2", "it's"), (Words{"it", "'s"}));
}

TEST(PreTokenizerTest, SmollmSplitsDigitsFirst) {
  EXPECT_EQ(Split("smollm", "a 123"), (Words{"a", " ", "1", "2", "3"}));
}

TEST(PreTokenizerTest, UnicodeLettersAndMarks) {
  // Letters of any script join; the CJK run is one word; an emoji is punctuation-like.
  EXPECT_EQ(Split("qwen2", "Äpfel 你好世界 \xF0\x9F\x98\x80"),
            (Words{"Äpfel", " 你好世界", " \xF0\x9F\x98\x80"}));
}

TEST(PreTokenizerTest, InvalidUtf8BecomesItsOwnWordsAndNothingIsLost) {
  const std::string text =
      "ab\xFF\xFE cd \x80"
      "e\xC3";
  for (std::string_view pre : {"llama3", "qwen2", "gpt2", "smollm", "default"}) {
    const Words words = Split(pre, text);
    std::string joined;
    for (const auto& word : words) {
      EXPECT_FALSE(word.empty());
      joined += word;
    }
    EXPECT_EQ(joined, text) << pre;
  }
  EXPECT_EQ(Split("llama3",
                  "ab\xFF"
                  "cd"),
            (Words{"ab", "\xFF", "cd"}));
}

TEST(PreTokenizerTest, EmptyTextHasNoWords) { EXPECT_TRUE(Split("llama3", "").empty()); }

TEST(PreTokenizerTest, UnknownNameIsUnimplemented) {
  auto pre_tokenizer = PreTokenizer::Create("no-such-pre");
  ASSERT_FALSE(pre_tokenizer.ok());
  EXPECT_EQ(pre_tokenizer.status().code(), StatusCode::kUnimplemented);
}

TEST(PreTokenizerTest, IgnoreMergesOnlyForLlama3) {
  EXPECT_TRUE(PreTokenizer::Create("llama-bpe")->ignore_merges());
  EXPECT_FALSE(PreTokenizer::Create("qwen2")->ignore_merges());
  EXPECT_EQ(PreTokenizer::Create("default")->num_patterns(), 4u);
}

TEST(PreTokenizerTest, LongWhitespaceRunDoesNotBreakTheMatcher) {
  const std::string text = "a" + std::string(200000, ' ') + "b";
  const Words words = Split("llama3", text);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[1].size(), 199999u);
  EXPECT_EQ(words[2], " b");
}

}  // namespace
}  // namespace reprise::tokenizer
