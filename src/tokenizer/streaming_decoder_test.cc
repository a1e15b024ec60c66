#include "tokenizer/streaming_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/shared_data.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

constexpr EncodeOptions kPlain{.add_special = false, .parse_special = false};

bool IsValidUtf8(std::string_view text) {
  for (size_t offset = 0; offset < text.size();) {
    const size_t length = ValidUtf8SequenceLength(text, offset);
    if (length == 0) return false;
    offset += length;
  }
  return true;
}

TEST(StreamingDecoderTest, EmojiSplitAcrossByteTokens) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = testing::SharedStoriesTokenizer();
  // BOS, "▁Lily", "'", "s", "▁", then 😀 as <0xF0> <0x9F> <0x98> <0x80>, then "!".
  const std::vector<TokenId> ids = tokenizer.Encode("Lily's \xF0\x9F\x98\x80!");
  ASSERT_EQ(ids.size(), 10u);
  StreamingDecoder decoder(tokenizer);
  std::vector<std::string> outputs;
  for (TokenId id : ids) outputs.push_back(decoder.Push(id));
  EXPECT_EQ(outputs, (std::vector<std::string>{"", "Lily", "'", "s", " ", "", "", "",
                                               "\xF0\x9F\x98\x80", "!"}));
  EXPECT_EQ(decoder.Flush(), "");
}

TEST(StreamingDecoderTest, FlushHandsOutAnIncompleteCharacter) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = testing::SharedStoriesTokenizer();
  StreamingDecoder decoder(tokenizer);
  EXPECT_EQ(decoder.Push(3 + 0xF0), "");
  EXPECT_EQ(decoder.Push(3 + 0x9F), "");
  EXPECT_EQ(decoder.num_pending_bytes(), 2u);
  EXPECT_EQ(decoder.Flush(), "\xF0\x9F");
  // A byte that cannot continue the sequence releases what was held, as is.
  EXPECT_EQ(decoder.Push(3 + 0xE2), "");
  EXPECT_EQ(decoder.Push(3 + 'a'),
            "\xE2"
            "a");
}

TEST(StreamingDecoderTest, LeadingSpaceOnlyStrippedWhenAsked) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = testing::SharedStoriesTokenizer();
  const std::vector<TokenId> ids = tokenizer.Encode("Once upon", kPlain);  // ▁Once ▁upon
  StreamingDecoder fresh(tokenizer);
  std::string text;
  for (TokenId id : ids) text += fresh.Push(id);
  EXPECT_EQ(text, "Once upon");
  StreamingDecoder continuation(tokenizer,
                                DecodeOptions{.skip_special = true, .strip_leading_space = false});
  text.clear();
  for (TokenId id : ids) text += continuation.Push(id);
  EXPECT_EQ(text, " Once upon");
  continuation.Reset();
  EXPECT_EQ(continuation.Push(ids[0]), " Once");
}

TEST(StreamingDecoderTest, ByteLevelBpeMatchesDecodeAndEmitsOnlyWholeCharacters) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/tokenizers/llama3/tokenizer.model");
  const Tokenizer& tokenizer = testing::SharedTiktokenTokenizer(TiktokenFamily::kLlama3);
  const std::string text =
      "Emoji 🦙🚀😶‍🌫️ and rare CJK 𠀋𡈽 and Khmer កាន់តែពិសេស, "
      "done.";
  const std::vector<TokenId> ids = tokenizer.Encode(text);
  // Some token must end inside a character, or the test would prove nothing.
  bool has_partial_token = false;
  for (TokenId id : ids) has_partial_token |= !IsValidUtf8(tokenizer.TokenPiece(id));
  ASSERT_TRUE(has_partial_token);

  StreamingDecoder decoder(tokenizer);
  std::string streamed;
  for (TokenId id : ids) {
    const std::string chunk = decoder.Push(id);
    EXPECT_TRUE(IsValidUtf8(chunk));
    streamed += chunk;
  }
  streamed += decoder.Flush();
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(streamed, tokenizer.Decode(ids, true));
}

TEST(StreamingDecoderTest, SpecialTokensFollowTheOptions) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/tokenizers/qwen/qwen.tiktoken");
  const Tokenizer& tokenizer = testing::SharedTiktokenTokenizer(TiktokenFamily::kQwen);
  const std::vector<TokenId> ids =
      tokenizer.Encode("<think>\nhmm\n</think>\n\nHi<|im_end|>", EncodeOptions{false, true});
  ASSERT_EQ(ids.back(), 151645);
  StreamingDecoder quiet(tokenizer);
  StreamingDecoder verbose(tokenizer, DecodeOptions{.skip_special = false});
  std::string quiet_text;
  std::string verbose_text;
  for (TokenId id : ids) {
    quiet_text += quiet.Push(id);
    verbose_text += verbose.Push(id);
  }
  // <think> is user-defined (always shown); <|im_end|> is control.
  EXPECT_EQ(quiet_text, "<think>\nhmm\n</think>\n\nHi");
  EXPECT_EQ(verbose_text, "<think>\nhmm\n</think>\n\nHi<|im_end|>");
}

}  // namespace
}  // namespace reprise::tokenizer
