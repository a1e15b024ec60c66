// Byte-level BPE on the real Llama 3 and Qwen vocabularies (imported from tiktoken files):
// llama.cpp's reference vectors, then our own cases and round trips.
#include "tokenizer/bpe_encoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "support/shared_data.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace reprise::tokenizer {
namespace {

using testing::SharedTiktokenTokenizer;

constexpr EncodeOptions kPlain{.add_special = false, .parse_special = false};

std::string Escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", c);
      out += buffer;
    }
  }
  return out;
}

void ExpectVectorsPass(const Tokenizer& tokenizer, const std::string& inp, const std::string& out) {
  auto cases = testing::ReadLlamaCppVocabTests(inp, out);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 46u);
  int num_failed = 0;
  for (const auto& test_case : *cases) {
    const std::vector<TokenId> ids = tokenizer.Encode(test_case.text, kPlain);
    EXPECT_EQ(ids, test_case.ids) << "text: '" << Escape(test_case.text) << "'";
    if (ids != test_case.ids) ++num_failed;
    EXPECT_EQ(tokenizer.Decode(ids), test_case.text);
  }
  EXPECT_EQ(num_failed, 0);
}

TEST(BpeVectorsTest, Llama3MatchesLlamaCpp) {
  REPRISE_REQUIRE_SHARED_FILE(model, "models/tokenizers/llama3/tokenizer.model");
  REPRISE_REQUIRE_SHARED_FILE(
      inp, "models/tokenizers/llamacpp-vocab-tests/ggml-vocab-llama-bpe.gguf.inp");
  REPRISE_REQUIRE_SHARED_FILE(
      out, "models/tokenizers/llamacpp-vocab-tests/ggml-vocab-llama-bpe.gguf.out");
  ExpectVectorsPass(SharedTiktokenTokenizer(TiktokenFamily::kLlama3), inp, out);
}

TEST(BpeVectorsTest, QwenMatchesLlamaCpp) {
  REPRISE_REQUIRE_SHARED_FILE(model, "models/tokenizers/qwen/qwen.tiktoken");
  REPRISE_REQUIRE_SHARED_FILE(inp,
                              "models/tokenizers/llamacpp-vocab-tests/ggml-vocab-qwen2.gguf.inp");
  REPRISE_REQUIRE_SHARED_FILE(out,
                              "models/tokenizers/llamacpp-vocab-tests/ggml-vocab-qwen2.gguf.out");
  ExpectVectorsPass(SharedTiktokenTokenizer(TiktokenFamily::kQwen), inp, out);
}

// The bytes of each token of `text`, encoded without BOS.
std::vector<std::string> Pieces(const Tokenizer& tokenizer, std::string_view text,
                                EncodeOptions options = kPlain) {
  std::vector<std::string> pieces;
  for (TokenId id : tokenizer.Encode(text, options)) pieces.push_back(tokenizer.TokenPiece(id));
  return pieces;
}

using PieceList = std::vector<std::string>;

class BpeCasesTest : public ::testing::TestWithParam<TiktokenFamily> {
 protected:
  void SetUp() override {
    const char* file = GetParam() == TiktokenFamily::kLlama3
                           ? "models/tokenizers/llama3/tokenizer.model"
                           : "models/tokenizers/qwen/qwen.tiktoken";
    REPRISE_REQUIRE_SHARED_FILE(path, file);
    tokenizer_ = &SharedTiktokenTokenizer(GetParam());
  }
  bool is_llama3() const { return GetParam() == TiktokenFamily::kLlama3; }

  const Tokenizer* tokenizer_ = nullptr;
};

TEST_P(BpeCasesTest, Digits) {
  // Llama 3 groups up to three digits; Qwen splits every digit.
  const PieceList llama3_digits = {"123", "456", "7"};
  const PieceList qwen_digits = {"1", "2", "3", "4", "5", "6", "7"};
  EXPECT_EQ(Pieces(*tokenizer_, "1234567"), is_llama3() ? llama3_digits : qwen_digits);
  const PieceList llama3_pi = {"pi", "=", "3", ".", "14"};
  const PieceList qwen_pi = {"pi", "=", "3", ".", "1", "4"};
  EXPECT_EQ(Pieces(*tokenizer_, "pi=3.14"), is_llama3() ? llama3_pi : qwen_pi);
}

TEST_P(BpeCasesTest, WhitespaceRunsTabsAndNewlines) {
  EXPECT_EQ(Pieces(*tokenizer_, "x   y"), (PieceList{"x", "  ", " y"}));
  EXPECT_EQ(Pieces(*tokenizer_, "a\t\tb\n\n\nc \n d"),
            (PieceList{"a", "\t", "\tb", "\n\n\n", "c", " \n", " d"}));
  EXPECT_EQ(Pieces(*tokenizer_, "end  "), (PieceList{"end", "  "}));
}

TEST_P(BpeCasesTest, PunctuationContractionsAndCode) {
  EXPECT_EQ(Pieces(*tokenizer_, "Hello, world!!! (ok)..."),
            (PieceList{"Hello", ",", " world", "!!!", " (", "ok", ")..."}));
  EXPECT_EQ(Pieces(*tokenizer_, "I'm here, you're there"),
            (PieceList{"I", "'m", " here", ",", " you", "'re", " there"}));
  EXPECT_EQ(
      Pieces(*tokenizer_, "def f(x):\n    return x**2  # sq"),
      (PieceList{"def", " f", "(x", "):\n", "   ", " return", " x", "**", "2", " ", " #", " sq"}));
}

TEST_P(BpeCasesTest, AccentsCjkAndEmoji) {
  EXPECT_EQ(Pieces(*tokenizer_, "naïve café Ärger"),
            (PieceList{"na", "ï", "ve", " café", " Ä", "r", "ger"}));
  if (is_llama3()) {
    EXPECT_EQ(Pieces(*tokenizer_, "你好，世界。"), (PieceList{"你", "好", "，", "世界", "。"}));
    // The emoji are not tokens: they fall apart into byte pieces.
    EXPECT_EQ(Pieces(*tokenizer_, "🦙🚀").size(), 6u);
  } else {
    EXPECT_EQ(Pieces(*tokenizer_, "你好，世界。"), (PieceList{"你好", "，", "世界", "。"}));
    EXPECT_EQ(Pieces(*tokenizer_, "🦙🚀"), (PieceList{"🦙", "🚀"}));
  }
}

TEST_P(BpeCasesTest, SpecialTokensOnlyWhenParsed) {
  const EncodeOptions parse{.add_special = false, .parse_special = true};
  if (is_llama3()) {
    const std::string text = "<|start_header_id|>hi<|eot_id|>";
    EXPECT_EQ(tokenizer_->Encode(text, parse), (std::vector<TokenId>{128006, 6151, 128009}));
    const auto plain = tokenizer_->Encode(text, kPlain);
    EXPECT_EQ(plain.size(), 15u);
    for (TokenId id : plain) EXPECT_LT(id, 128000);
    EXPECT_EQ(tokenizer_->Decode(plain), text);
  } else {
    const std::string text = "<|im_start|>hi<think>x</think>";
    EXPECT_EQ(tokenizer_->Encode(text, parse),
              (std::vector<TokenId>{151644, 6023, 151667, 87, 151668}));
    // <think> is user-defined: recognised even without parse_special.
    EXPECT_EQ(tokenizer_->Encode(text, kPlain),
              (std::vector<TokenId>{27, 91, 318, 4906, 91, 29, 6023, 151667, 87, 151668}));
  }
}

TEST_P(BpeCasesTest, BosEmptyAndInvalidUtf8) {
  const std::vector<TokenId> empty_with_special = tokenizer_->Encode("");
  EXPECT_EQ(empty_with_special,
            is_llama3() ? std::vector<TokenId>{128000} : std::vector<TokenId>{});
  EXPECT_TRUE(tokenizer_->Encode("", kPlain).empty());
  const std::string invalid = "\xFF\xFE\x80 ok \xC3(\xF0\x9F";
  const auto ids = tokenizer_->Encode(invalid, kPlain);
  EXPECT_EQ(tokenizer_->Decode(ids), invalid);
  EXPECT_EQ(Pieces(*tokenizer_, "\xFF\xFE\x80"), (PieceList{"\xFF", "\xFE", "\x80"}));
}

TEST_P(BpeCasesTest, RoundTrips) {
  const std::vector<std::string> texts = {
      "The quick brown fox jumps over the lazy dog.",
      "  leading, trailing and   inner   spaces  ",
      "\t\ttabs\r\nand CRLF\r\n",
      "Ünïcödé: ½ ∑ √ ∞ — «quotes» „low“ 'single'",
      "中文 日本語 한국어 ไทย العربية עברית हिन्दी",
      "emoji 😀🦙🚀 flags 🇫🇷 family 👨‍👩‍👧 skin 👍🏽",
      "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot",
      "<|im_start|> looks special but is text <|eot_id|>",
      std::string("zero\0byte and \x01\x02 controls", 25),
      "'s 't 're 've 'm 'll 'd 'S 'T 'RE",
  };
  for (const std::string& text : texts) {
    const auto ids = tokenizer_->Encode(text, kPlain);
    EXPECT_EQ(tokenizer_->Decode(ids), text);
    std::string joined;
    for (const auto& piece : Pieces(*tokenizer_, text)) joined += piece;
    EXPECT_EQ(joined, text);
  }
}

TEST_P(BpeCasesTest, LargeRealTextRoundTrips) {
  REPRISE_REQUIRE_SHARED_FILE(path, "workloads/hotpotqa/hotpotqa_distractor_100.jsonl");
  auto contents = ReadFileToString(path);
  ASSERT_TRUE(contents.ok());
  // 200 KB cut at an arbitrary byte, so the last character may be incomplete.
  const std::string text = contents->substr(0, 200001);
  const auto ids = tokenizer_->Encode(text, kPlain);
  EXPECT_GT(ids.size(), text.size() / 6);
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_EQ(tokenizer_->Decode(ids), text);
}

INSTANTIATE_TEST_SUITE_P(Families, BpeCasesTest,
                         ::testing::Values(TiktokenFamily::kLlama3, TiktokenFamily::kQwen),
                         [](const ::testing::TestParamInfo<TiktokenFamily>& param_info) {
                           return param_info.param == TiktokenFamily::kLlama3 ? "Llama3" : "Qwen";
                         });

}  // namespace
}  // namespace reprise::tokenizer
