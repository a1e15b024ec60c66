#include "tokenizer/tiktoken_import.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/shared_data.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

TEST(TiktokenImportTest, ParsesRanks) {
  // "a" 0, "b" 1, "ab" 2, "\n" 3 (base64 of 0x0A is "Cg==").
  auto ranks = ParseTiktokenRanks("YQ== 0\nYg== 1\r\nYWI= 2\nCg== 3\n\n");
  ASSERT_TRUE(ranks.ok()) << ranks.status().ToString();
  EXPECT_EQ(*ranks, (std::vector<std::string>{"a", "b", "ab", "\n"}));
}

TEST(TiktokenImportTest, RejectsBadFiles) {
  EXPECT_EQ(ParseTiktokenRanks("YQ== 0\nYg== 0\n").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("YQ== 0\nYg== 2\n").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("Y!== 0\n").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("YQ==\n").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("YQ== x\n").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("").status().code(), StatusCode::kCorrupt);
}

TEST(TiktokenImportTest, RecoversMergesByReplayingLowerRanks) {
  // "abc" (rank 4) is reached as "ab" + "c": "bc" (rank 5) ranks after it.
  const std::vector<std::string> ranks = {"a", "b", "c", "ab", "abc", "bc", " ", " a"};
  EXPECT_EQ(MergesFromRanks(ranks), (std::vector<std::string>{"a b", "ab c", "b c", "\xC4\xA0 a"}));
}

TEST(TiktokenImportTest, AllSplitsListsEverySplitByRank) {
  const std::vector<std::string> ranks = {"a", "b", "c", "ab", "abc", "bc"};
  EXPECT_EQ(MergesFromRanks(ranks, MergeRecovery::kAllSplits),
            (std::vector<std::string>{"a b", "a bc", "ab c", "b c"}));
}

TEST(TiktokenImportTest, SkipsTokensThatLowerRanksCannotBuild) {
  // "abc" has rank 3 but neither "ab" nor "bc" ranks below it.
  const std::vector<std::string> ranks = {"a", "b", "c", "abc", "ab"};
  EXPECT_EQ(MergesFromRanks(ranks), (std::vector<std::string>{"a b"}));
}

TEST(TiktokenImportTest, Llama3Vocabulary) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/tokenizers/llama3/tokenizer.model");
  auto vocab = VocabFromTiktoken(path, TiktokenFamily::kLlama3);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->kind, VocabKind::kBpe);
  EXPECT_EQ(vocab->pre, "llama-bpe");
  ASSERT_EQ(vocab->num_tokens(), 128256u);
  // Every two-part split, as in Hugging Face's Llama 3 tokenizer.json (280147 merges).
  EXPECT_EQ(vocab->merges.size(), 280147u);
  EXPECT_EQ(vocab->merges[0], "\xC4\xA0 \xC4\xA0");  // "  ", the first merge
  EXPECT_EQ(vocab->tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(vocab->tokens[128001], "<|end_of_text|>");
  EXPECT_EQ(vocab->tokens[128006], "<|start_header_id|>");
  EXPECT_EQ(vocab->tokens[128008], "<|eom_id|>");
  EXPECT_EQ(vocab->tokens[128009], "<|eot_id|>");
  EXPECT_EQ(vocab->tokens[128011], "<|image|>");
  EXPECT_EQ(vocab->tokens[128012], "<|reserved_special_token_2|>");
  EXPECT_EQ(vocab->tokens[128255], "<|reserved_special_token_245|>");
  EXPECT_EQ(vocab->type_of(127999), TokenType::kNormal);
  EXPECT_EQ(vocab->type_of(128000), TokenType::kControl);
  EXPECT_EQ(vocab->type_of(128255), TokenType::kControl);
  EXPECT_EQ(vocab->bos_id, 128000);
  EXPECT_EQ(vocab->eos_id, 128001);
  EXPECT_EQ(vocab->eot_id, 128009);
  EXPECT_EQ(vocab->eom_id, 128008);
  EXPECT_TRUE(vocab->add_bos);
  EXPECT_FALSE(vocab->add_eos);
  EXPECT_EQ(DetectChatFormat(*vocab), ChatFormat::kLlama3);
  // Token texts are GPT-2 text: " the" is "Ġthe".
  EXPECT_EQ(Gpt2TextToBytes(vocab->tokens[279]), " the");
}

TEST(TiktokenImportTest, QwenVocabulary) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/tokenizers/qwen/qwen.tiktoken");
  auto vocab = VocabFromTiktoken(path, TiktokenFamily::kQwen);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->pre, "qwen2");
  ASSERT_EQ(vocab->num_tokens(), 151669u);
  EXPECT_EQ(vocab->merges.size(), 151387u);  // as in Qwen2's merges.txt
  EXPECT_EQ(vocab->tokens[151643], "<|endoftext|>");
  EXPECT_EQ(vocab->tokens[151644], "<|im_start|>");
  EXPECT_EQ(vocab->tokens[151645], "<|im_end|>");
  EXPECT_EQ(vocab->tokens[151657], "<tool_call>");
  EXPECT_EQ(vocab->tokens[151659], "<|fim_prefix|>");
  EXPECT_EQ(vocab->tokens[151664], "<|file_sep|>");
  EXPECT_EQ(vocab->tokens[151667], "<think>");
  EXPECT_EQ(vocab->tokens[151668], "</think>");
  EXPECT_EQ(vocab->type_of(151644), TokenType::kControl);
  EXPECT_EQ(vocab->type_of(151657), TokenType::kUserDefined);
  EXPECT_EQ(vocab->type_of(151659), TokenType::kControl);
  EXPECT_EQ(vocab->type_of(151667), TokenType::kUserDefined);
  EXPECT_EQ(vocab->eos_id, 151643);
  EXPECT_EQ(vocab->eot_id, 151645);
  EXPECT_FALSE(vocab->add_bos);
  EXPECT_EQ(DetectChatFormat(*vocab), ChatFormat::kChatMl);
}

TEST(TiktokenImportTest, WrongFamilyIsCorrupt) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/tokenizers/qwen/qwen.tiktoken");
  EXPECT_EQ(VocabFromTiktoken(path, TiktokenFamily::kLlama3).status().code(), StatusCode::kCorrupt);
}

TEST(TiktokenImportTest, MissingFileIsNotFound) {
  EXPECT_EQ(
      VocabFromTiktoken("/nonexistent/tokenizer.model", TiktokenFamily::kLlama3).status().code(),
      StatusCode::kNotFound);
}

}  // namespace
}  // namespace reprise::tokenizer
