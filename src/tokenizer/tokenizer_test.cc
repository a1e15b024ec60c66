// Tokenizer behaviour on small hand-built vocabularies: merge order, byte fallback, special
// tokens, BOS/EOS, decoding options, invalid input. (The real vocabularies are tested in
// bpe_encoder_test.cc and spm_encoder_test.cc.)
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

constexpr EncodeOptions kPlain{.add_special = false, .parse_special = false};
constexpr EncodeOptions kParse{.add_special = false, .parse_special = true};
constexpr std::string_view kSpace = "\xE2\x96\x81";

TokenId Add(Vocab& vocab, std::string text, TokenType type, float score = 0.0f) {
  vocab.tokens.push_back(std::move(text));
  vocab.token_types.push_back(type);
  vocab.scores.push_back(score);
  return static_cast<TokenId>(vocab.tokens.size() - 1);
}

// <unk> <s> </s>, optionally the 256 byte tokens, then pieces.
Vocab SpmVocab(bool with_bytes) {
  Vocab vocab;
  vocab.kind = VocabKind::kSpm;
  vocab.unk_id = Add(vocab, "<unk>", TokenType::kUnknown);
  vocab.bos_id = Add(vocab, "<s>", TokenType::kControl);
  vocab.eos_id = Add(vocab, "</s>", TokenType::kControl);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      Add(vocab, name, TokenType::kByte);
    }
  }
  vocab.add_bos = true;
  vocab.add_space_prefix = true;
  return vocab;
}

std::unique_ptr<Tokenizer> Make(Vocab vocab) {
  auto tokenizer = Tokenizer::Create(std::move(vocab));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  return tokenizer.ok() ? std::move(tokenizer).value() : nullptr;
}

TEST(SpmTokenizerTest, HigherScoreMergesFirst) {
  for (bool ab_first : {false, true}) {
    Vocab vocab = SpmVocab(true);
    const TokenId a = Add(vocab, "a", TokenType::kNormal, -10);
    Add(vocab, "b", TokenType::kNormal, -10);
    const TokenId c = Add(vocab, "c", TokenType::kNormal, -10);
    const TokenId ab = Add(vocab, "ab", TokenType::kNormal, ab_first ? -1 : -3);
    const TokenId bc = Add(vocab, "bc", TokenType::kNormal, -2);
    vocab.add_space_prefix = false;
    auto tokenizer = Make(std::move(vocab));
    const auto expected = ab_first ? std::vector<TokenId>{ab, c} : std::vector<TokenId>{a, bc};
    EXPECT_EQ(tokenizer->Encode("abc", kPlain), expected);
  }
}

TEST(SpmTokenizerTest, EqualScoresMergeLeftmostFirst) {
  Vocab vocab = SpmVocab(true);
  const TokenId a = Add(vocab, "a", TokenType::kNormal, -10);
  const TokenId aa = Add(vocab, "aa", TokenType::kNormal, -1);
  vocab.add_space_prefix = false;
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Encode("aaa", kPlain), (std::vector<TokenId>{aa, a}));
}

TEST(SpmTokenizerTest, SpacePrefixBosAndByteFallback) {
  Vocab vocab = SpmVocab(true);
  const TokenId space_h = Add(vocab, std::string(kSpace) + "h", TokenType::kNormal, -1);
  const TokenId h = Add(vocab, "h", TokenType::kNormal, -5);
  const TokenId space = Add(vocab, std::string(kSpace), TokenType::kNormal, -5);
  auto tokenizer = Make(std::move(vocab));
  // "h é": ▁h ▁ then é as the bytes C3 A9 (ids 3 + byte).
  EXPECT_EQ(tokenizer->Encode("h \xC3\xA9"),
            (std::vector<TokenId>{1, space_h, space, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tokenizer->Encode("h", kPlain), (std::vector<TokenId>{space_h}));
  EXPECT_EQ(tokenizer->Encode("", {}), (std::vector<TokenId>{1}));
  EXPECT_TRUE(tokenizer->Encode("", kPlain).empty());
  EXPECT_EQ(tokenizer->Decode(std::vector<TokenId>{1, space_h, h}, true), "hh");
  EXPECT_EQ(tokenizer->Decode(std::vector<TokenId>{1, space_h}, false), "<s> h");
  EXPECT_EQ(tokenizer->Decode(std::vector<TokenId>{space_h},
                              DecodeOptions{.skip_special = true, .strip_leading_space = false}),
            " h");
}

TEST(SpmTokenizerTest, UnknownTokenWithoutByteTokens) {
  Vocab vocab = SpmVocab(false);
  const TokenId x = Add(vocab, "x", TokenType::kNormal, -1);
  vocab.add_space_prefix = false;
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Encode("x\xE2\x82\xACx", kPlain), (std::vector<TokenId>{x, 0, x}));
}

TEST(SpmTokenizerTest, ControlTokensAreNotMergedFromText) {
  Vocab vocab = SpmVocab(true);
  Add(vocab, "<", TokenType::kNormal, -1);
  Add(vocab, "s", TokenType::kNormal, -1);
  Add(vocab, ">", TokenType::kNormal, -1);
  Add(vocab, "<s", TokenType::kNormal, -1);
  vocab.add_space_prefix = false;
  auto tokenizer = Make(std::move(vocab));
  const auto plain = tokenizer->Encode("<s>", kPlain);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(tokenizer->Decode(plain), "<s>");
  EXPECT_EQ(tokenizer->Encode("<s>", kParse), (std::vector<TokenId>{1}));
}

TEST(SpmTokenizerTest, SpacePrefixAfterEachSpecialToken) {
  Vocab vocab = SpmVocab(true);
  const TokenId space_x = Add(vocab, std::string(kSpace) + "x", TokenType::kNormal, -1);
  const TokenId x = Add(vocab, "x", TokenType::kNormal, -2);
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Encode("x</s>x<s>", kParse), (std::vector<TokenId>{space_x, 2, space_x, 1}));
  EXPECT_EQ(tokenizer->Encode("xx", kPlain), (std::vector<TokenId>{space_x, x}));
}

// A byte-level BPE vocabulary: the 256 byte characters (id = byte), then merges.
Vocab BpeVocab() {
  Vocab vocab;
  vocab.kind = VocabKind::kBpe;
  vocab.pre = "gpt2";
  for (int b = 0; b < 256; ++b) {
    Add(vocab, std::string(ByteToGpt2Char(static_cast<uint8_t>(b))), TokenType::kNormal);
  }
  vocab.scores.clear();
  vocab.add_space_prefix = false;
  return vocab;
}

TEST(BpeTokenizerTest, MergesApplyByRank) {
  Vocab vocab = BpeVocab();
  vocab.tokens.push_back("ab");   // 256
  vocab.tokens.push_back("abc");  // 257
  vocab.tokens.push_back(
      "\xC4\xA0"
      "a");  // 258: "Ġa"
  vocab.token_types.resize(vocab.tokens.size(), TokenType::kNormal);
  vocab.merges = {"a b", "ab c", "\xC4\xA0 a"};
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Encode("abc", kPlain), (std::vector<TokenId>{257}));
  // "a b" outranks "Ġ a", so " abc" keeps the space alone.
  EXPECT_EQ(tokenizer->Encode(" abc", kPlain), (std::vector<TokenId>{' ', 257}));
  EXPECT_EQ(tokenizer->Encode(" ax", kPlain), (std::vector<TokenId>{258, 'x'}));
  EXPECT_EQ(tokenizer->Decode(std::vector<TokenId>{' ', 257}), " abc");
  EXPECT_EQ(tokenizer->TokenPiece(258), " a");
  EXPECT_EQ(tokenizer->TokenText(258),
            "\xC4\xA0"
            "a");
}

TEST(BpeTokenizerTest, MergeIntoTextThatIsNotATokenFallsBackToBytes) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"x y"};  // "xy" is not a token
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Encode("xy", kPlain), (std::vector<TokenId>{'x', 'y'}));
}

TEST(BpeTokenizerTest, SpecialAndUserDefinedTokens) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  const TokenId bos = Add(vocab, "<|bos|>", TokenType::kControl);
  const TokenId start = Add(vocab, "<|im_start|>", TokenType::kControl);
  const TokenId start_long = Add(vocab, "<|im_start|>x", TokenType::kControl);
  const TokenId think = Add(vocab, "<think>", TokenType::kUserDefined);
  vocab.scores.clear();
  vocab.bos_id = bos;
  vocab.eos_id = bos;
  vocab.add_bos = true;
  auto tokenizer = Make(std::move(vocab));

  // Control tokens only with parse_special; the longest text wins.
  const auto parsed = tokenizer->Encode("<|im_start|>x<|im_start|>y", kParse);
  EXPECT_EQ(parsed, (std::vector<TokenId>{start_long, start, 'y'}));
  const auto plain = tokenizer->Encode("<|im_start|>", kPlain);
  EXPECT_EQ(plain.size(), 12u);
  EXPECT_EQ(tokenizer->Decode(plain), "<|im_start|>");
  // User-defined tokens always.
  EXPECT_EQ(tokenizer->Encode("a<think>b", kPlain), (std::vector<TokenId>{'a', think, 'b'}));
  // BOS from the vocabulary; EOS only when add_eos.
  EXPECT_EQ(tokenizer->Encode("a", {}), (std::vector<TokenId>{bos, 'a'}));

  const std::vector<TokenId> ids = {bos, start, 'h', think, 'i'};
  EXPECT_EQ(tokenizer->Decode(ids), "<|bos|><|im_start|>h<think>i");
  EXPECT_EQ(tokenizer->Decode(ids, true), "h<think>i");
  EXPECT_TRUE(tokenizer->IsSpecial(start));
  EXPECT_FALSE(tokenizer->IsSpecial(think));
  EXPECT_TRUE(tokenizer->IsEndOfGeneration(bos));
  EXPECT_FALSE(tokenizer->IsEndOfGeneration(start));
}

TEST(BpeTokenizerTest, EndOfGenerationTokensFoundByText) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  const TokenId endoftext = Add(vocab, "<|endoftext|>", TokenType::kControl);
  const TokenId im_end = Add(vocab, "<|im_end|>", TokenType::kControl);
  vocab.scores.clear();
  vocab.eos_id = endoftext;
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->eot_id(), im_end);
  EXPECT_TRUE(tokenizer->IsEndOfGeneration(im_end));
  EXPECT_TRUE(tokenizer->IsEndOfGeneration(endoftext));
  EXPECT_FALSE(tokenizer->IsEndOfGeneration('a'));
  EXPECT_EQ(tokenizer->end_of_generation_ids().size(), 2u);
}

TEST(BpeTokenizerTest, LiteralRangesKeepControlTokenTextAsText) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  const TokenId start = Add(vocab, "<|im_start|>", TokenType::kControl);
  const TokenId end = Add(vocab, "<|im_end|>", TokenType::kControl);
  const TokenId think = Add(vocab, "<think>", TokenType::kUserDefined);
  vocab.scores.clear();
  auto tokenizer = Make(std::move(vocab));

  // A chat turn whose content (bytes 17..) holds the end marker's text.
  const std::string head = "<|im_start|>user\n";
  const std::string content = "a<|im_end|><think>b";
  const std::string text = head + content + "<|im_end|>\n";
  const TextRange ranges[] = {{head.size(), content.size()}};
  EncodeOptions literal = kParse;
  literal.literal_ranges = ranges;
  const auto ids = tokenizer->Encode(text, literal);
  // The markers of the template are tokens; the content's "<|im_end|>" is its 10 bytes; the
  // user-defined <think> is a token wherever it is.
  std::vector<TokenId> expected = {start, 'u', 's', 'e', 'r', '\n', 'a'};
  for (char c : std::string("<|im_end|>")) expected.push_back(static_cast<uint8_t>(c));
  expected.insert(expected.end(), {think, 'b', end, '\n'});
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(tokenizer->Decode(ids), text);
  // Without the range, the content's marker would be the control token.
  const auto parsed = tokenizer->Encode(text, kParse);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), end), 2);

  // A marker that only starts or only ends inside a literal range stays text too.
  const std::string straddle = "<|im_end|>";
  const TextRange first_byte[] = {{0, 1}};
  const TextRange last_byte[] = {{straddle.size() - 1, 1}};
  literal.literal_ranges = first_byte;
  EXPECT_EQ(tokenizer->Encode(straddle, literal).size(), straddle.size());
  literal.literal_ranges = last_byte;
  EXPECT_EQ(tokenizer->Encode(straddle, literal).size(), straddle.size());
  // An empty range covers nothing.
  const TextRange empty[] = {{3, 0}};
  literal.literal_ranges = empty;
  EXPECT_EQ(tokenizer->Encode(straddle, literal), (std::vector<TokenId>{end}));
}

TEST(BpeTokenizerTest, LiteralRangesWithoutSpecialTextChangeNoToken) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  Add(vocab, "<|im_start|>", TokenType::kControl);
  Add(vocab, "<|im_end|>", TokenType::kControl);
  vocab.scores.clear();
  auto tokenizer = Make(std::move(vocab));
  const std::string text = "<|im_start|>user\nab <| im_end |> ab<|im_end|>\n<|im_start|>";
  const TextRange ranges[] = {{12, 4}, {17, 18}};  // "user", the content
  EncodeOptions literal = kParse;
  literal.literal_ranges = ranges;
  EXPECT_EQ(tokenizer->Encode(text, literal), tokenizer->Encode(text, kParse));
}

TEST(BpeTokenizerTest, ArbitraryBytesRoundTrip) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  auto tokenizer = Make(std::move(vocab));
  std::string all_bytes;
  for (int b = 255; b >= 0; --b) all_bytes += static_cast<char>(b);
  const auto ids = tokenizer->Encode(all_bytes, kPlain);
  EXPECT_EQ(ids.size(), 256u);
  EXPECT_EQ(tokenizer->Decode(ids), all_bytes);
}

TEST(TokenizerTest, OutOfRangeIdsDecodeToNothing) {
  Vocab vocab = BpeVocab();
  vocab.merges = {"a b"};
  auto tokenizer = Make(std::move(vocab));
  EXPECT_EQ(tokenizer->Decode(std::vector<TokenId>{-1, 'a', 100000}), "a");
  EXPECT_EQ(tokenizer->TokenText(-5), "");
  EXPECT_EQ(tokenizer->TokenPiece(1 << 20), "");
  EXPECT_FALSE(tokenizer->IsValid(256));
}

TEST(TokenizerTest, CreateRejectsInconsistentVocabulary) {
  Vocab vocab = SpmVocab(true);
  vocab.scores.pop_back();
  EXPECT_EQ(Tokenizer::Create(std::move(vocab)).status().code(), StatusCode::kCorrupt);
  Vocab bpe = BpeVocab();  // no merges
  EXPECT_EQ(Tokenizer::Create(std::move(bpe)).status().code(), StatusCode::kCorrupt);
  Vocab unknown_pre = BpeVocab();
  unknown_pre.merges = {"a b"};
  unknown_pre.pre = "mystery";
  EXPECT_EQ(Tokenizer::Create(std::move(unknown_pre)).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace reprise::tokenizer
