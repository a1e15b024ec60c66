#include "tokenizer/text_encoding.h"

#include <gtest/gtest.h>

#include <string>

namespace reprise::tokenizer {
namespace {

TEST(TextEncodingTest, ValidSequenceLengths) {
  EXPECT_EQ(ValidUtf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(ValidUtf8SequenceLength("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(ValidUtf8SequenceLength("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(ValidUtf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);  // 😀
  EXPECT_EQ(ValidUtf8SequenceLength("x\xC3\xA9", 1), 2u);
}

TEST(TextEncodingTest, InvalidSequencesHaveLengthZero) {
  EXPECT_EQ(ValidUtf8SequenceLength("\x80", 0), 0u);  // stray continuation
  EXPECT_EQ(ValidUtf8SequenceLength("\xFF", 0), 0u);  // never valid
  EXPECT_EQ(ValidUtf8SequenceLength("\xC3", 0), 0u);  // cut short
  EXPECT_EQ(ValidUtf8SequenceLength("\xC3"
                                    "a",
                                    0),
            0u);                                                  // missing continuation
  EXPECT_EQ(ValidUtf8SequenceLength("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(ValidUtf8SequenceLength("\xED\xA0\x80", 0), 0u);      // surrogate D800
  EXPECT_EQ(ValidUtf8SequenceLength("\xF4\x90\x80\x80", 0), 0u);  // past U+10FFFF
}

TEST(TextEncodingTest, IncompleteTail) {
  EXPECT_EQ(IncompleteUtf8TailLength(""), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("ab\xF0"), 1u);
  EXPECT_EQ(IncompleteUtf8TailLength("ab\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteUtf8TailLength("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8TailLength("ab\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("\xC3\xA9"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("\xE2\x82"), 2u);
  EXPECT_EQ(IncompleteUtf8TailLength("\x80\x80"), 0u);  // can never complete
}

TEST(TextEncodingTest, DecodeAndAppendRoundTrip) {
  for (uint32_t code_point : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0x10FFFFu}) {
    std::string text;
    AppendUtf8(code_point, text);
    auto decoded = DecodeUtf8At(text, 0);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, code_point);
  }
  EXPECT_FALSE(DecodeUtf8At("\xFF", 0).has_value());
}

TEST(TextEncodingTest, Gpt2TableMatchesKnownCharacters) {
  EXPECT_EQ(ByteToGpt2Char('A'), "A");
  EXPECT_EQ(ByteToGpt2Char('!'), "!");
  EXPECT_EQ(ByteToGpt2Char(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(ByteToGpt2Char('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(ByteToGpt2Char('\t'), "\xC4\x89");  // ĉ U+0109
  EXPECT_EQ(ByteToGpt2Char(0x00), "\xC4\x80");  // Ā U+0100
  EXPECT_EQ(ByteToGpt2Char(0xAD), "\xC5\x83");  // Ń U+0143, the last extra
  EXPECT_EQ(ByteToGpt2Char(0xE9), "\xC3\xA9");  // é keeps its code point
}

TEST(TextEncodingTest, Gpt2TextRoundTripsEveryByte) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  const std::string text = BytesToGpt2Text(all_bytes);
  EXPECT_EQ(Gpt2TextToBytes(text), all_bytes);
  // 188 printable bytes stay one character; every character is distinct.
  for (int a = 0; a < 256; ++a) {
    for (int b = a + 1; b < 256; ++b) {
      ASSERT_NE(ByteToGpt2Char(static_cast<uint8_t>(a)), ByteToGpt2Char(static_cast<uint8_t>(b)));
    }
  }
}

TEST(TextEncodingTest, Gpt2TextToBytesPassesUnknownCharactersThrough) {
  EXPECT_EQ(Gpt2TextToBytes("\xE4\xBD\xA0"), "\xE4\xBD\xA0");  // 你 is not in the table
  EXPECT_EQ(Gpt2TextToBytes("a\xFF"), "a\xFF");                // invalid UTF-8
}

}  // namespace
}  // namespace reprise::tokenizer
