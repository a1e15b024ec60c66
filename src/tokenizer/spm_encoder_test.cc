// SentencePiece-style tokenization on the real stories260K vocabulary (512 pieces, byte
// fallback), checked against the ids the model generated in greedy_reference.json.
#include "tokenizer/spm_encoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "support/shared_data.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace reprise::tokenizer {
namespace {

using testing::SharedStoriesTokenizer;

constexpr EncodeOptions kPlain{.add_special = false, .parse_special = false};

std::vector<std::string> Texts(const Tokenizer& tokenizer, const std::vector<TokenId>& ids) {
  std::vector<std::string> texts;
  for (TokenId id : ids) texts.emplace_back(tokenizer.TokenText(id));
  return texts;
}

TEST(StoriesSpmTest, VocabularyAsLlamaCppReadsIt) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = SharedStoriesTokenizer();
  EXPECT_EQ(tokenizer.num_tokens(), 512u);
  EXPECT_EQ(tokenizer.vocab().kind, VocabKind::kSpm);
  EXPECT_EQ(tokenizer.bos_id(), 1);
  EXPECT_EQ(tokenizer.eos_id(), 2);
  EXPECT_TRUE(tokenizer.vocab().add_bos);
  EXPECT_TRUE(tokenizer.adds_space_prefix());
  EXPECT_TRUE(tokenizer.IsEndOfGeneration(2));
  EXPECT_FALSE(tokenizer.IsEndOfGeneration(1));
  EXPECT_EQ(tokenizer.TokenText(13), "<0x0A>");
  EXPECT_EQ(tokenizer.TokenPiece(13), "\n");
  EXPECT_EQ(tokenizer.TokenPiece(403), " Once");
}

TEST(StoriesSpmTest, KnownIds) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = SharedStoriesTokenizer();
  EXPECT_EQ(tokenizer.Encode("Once upon a time"), (std::vector<TokenId>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tokenizer.Encode("Once upon a time", kPlain),
            (std::vector<TokenId>{403, 407, 261, 378}));
  // Byte fallback: the emoji is not a piece, so it becomes its four UTF-8 bytes (<0xXX> is
  // id 3 + byte); a newline is <0x0A>; a tab <0x09>.
  EXPECT_EQ(Texts(tokenizer, tokenizer.Encode("Lily's \xF0\x9F\x98\x80!", kPlain)),
            (std::vector<std::string>{"\xE2\x96\x81Lily", "'", "s", "\xE2\x96\x81", "<0xF0>",
                                      "<0x9F>", "<0x98>", "<0x80>", "!"}));
  EXPECT_EQ(tokenizer.Encode("a\nb", kPlain)[1], 13);
  EXPECT_EQ(tokenizer.Encode("\t", kPlain), (std::vector<TokenId>{410, 12}));
  // Empty text: just BOS, or nothing.
  EXPECT_EQ(tokenizer.Encode(""), (std::vector<TokenId>{1}));
  EXPECT_TRUE(tokenizer.Encode("", kPlain).empty());
}

TEST(StoriesSpmTest, SpecialTokensOnlyWhenParsed) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = SharedStoriesTokenizer();
  const auto parsed = tokenizer.Encode("<s>hello</s>", EncodeOptions{false, true});
  EXPECT_EQ(parsed.front(), 1);
  EXPECT_EQ(parsed.back(), 2);
  EXPECT_EQ(tokenizer.Decode(parsed, true), "hello");
  const auto plain = tokenizer.Encode("<s>hello</s>", kPlain);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tokenizer.Decode(plain), "<s>hello</s>");
}

TEST(StoriesSpmTest, GreedyReferenceTextEncodesToTheGeneratedIds) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/greedy_reference.json");
  REPRISE_REQUIRE_SHARED_FILE(model, "models/stories260K/stories260K.gguf");
  auto contents = ReadFileToString(path);
  ASSERT_TRUE(contents.ok());
  const auto json = nlohmann::json::parse(*contents, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded());
  const auto generated = json["generated_ids"].get<std::vector<TokenId>>();
  const auto text = json["generated_text"].get<std::string>();
  ASSERT_EQ(generated.size(), 256u);
  const Tokenizer& tokenizer = SharedStoriesTokenizer();

  // The model's greedy ids decode to the reference text (llama2.c strips the space after BOS).
  EXPECT_EQ(tokenizer.Decode(generated, true), text);
  std::vector<TokenId> with_bos = {1};
  with_bos.insert(with_bos.end(), generated.begin(), generated.end());
  EXPECT_EQ(tokenizer.Decode(with_bos, true), text);
  // Re-encoding the text gives back exactly BOS + the generated ids: for this story the
  // model always picked the tokenizer's own segmentation.
  EXPECT_EQ(tokenizer.Encode(text), with_bos);
}

TEST(StoriesSpmTest, RoundTrips) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  const Tokenizer& tokenizer = SharedStoriesTokenizer();
  const std::vector<std::string> texts = {
      "Hello world",
      "  leading and trailing  ",
      "tabs\tand\nnewlines\n\n",
      "Café, naïve, Ünïcödé — 你好 🚀🦙",
      "code: if (x < 3) { return y[i] * 2; }",
      "invalid \xFF\xFE utf-8 \x80 and cut \xF0\x9F",
      std::string("nul\0byte", 8),
      "1234567890 3.14159",
  };
  for (const std::string& text : texts) {
    EXPECT_EQ(tokenizer.Decode(tokenizer.Encode(text), true), text);
    EXPECT_EQ(tokenizer.Decode(tokenizer.Encode(text, kPlain)), text);
  }
}

}  // namespace
}  // namespace reprise::tokenizer
