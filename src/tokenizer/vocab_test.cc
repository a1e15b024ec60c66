#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace reprise::tokenizer {
namespace {

// `buffer` keeps the file bytes alive.
Result<Vocab> RoundTrip(const Vocab& vocab, std::vector<uint8_t>& buffer) {
  gguf::GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  WriteVocabToGguf(vocab, writer);
  buffer = writer.WriteToBuffer();
  REPRISE_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Parse(buffer));
  return ReadVocabFromGguf(file);
}

TEST(VocabTest, DefaultAddBosFollowsLlamaCpp) {
  EXPECT_TRUE(DefaultAddBos(VocabKind::kSpm, ""));
  EXPECT_TRUE(DefaultAddBos(VocabKind::kBpe, "llama-bpe"));
  EXPECT_TRUE(DefaultAddBos(VocabKind::kBpe, "llama3"));
  EXPECT_FALSE(DefaultAddBos(VocabKind::kBpe, "qwen2"));
  EXPECT_FALSE(DefaultAddBos(VocabKind::kBpe, "gpt2"));
  EXPECT_FALSE(DefaultAddBos(VocabKind::kBpe, "smollm"));
  EXPECT_FALSE(DefaultAddBos(VocabKind::kBpe, "default"));
}

TEST(VocabTest, GgufRoundTrip) {
  Vocab vocab;
  vocab.kind = VocabKind::kBpe;
  vocab.pre = "qwen2";
  vocab.tokens = {"a", "b", "ab", "<|endoftext|>"};
  vocab.token_types = {TokenType::kNormal, TokenType::kNormal, TokenType::kNormal,
                       TokenType::kControl};
  vocab.merges = {"a b"};
  vocab.eos_id = 3;
  vocab.eot_id = 3;
  vocab.add_bos = false;
  vocab.add_space_prefix = false;
  vocab.chat_template = "{{ '<|im_start|>' }}";
  std::vector<uint8_t> buffer;
  auto read = RoundTrip(vocab, buffer);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->kind, VocabKind::kBpe);
  EXPECT_EQ(read->pre, "qwen2");
  EXPECT_EQ(read->tokens, vocab.tokens);
  EXPECT_EQ(read->token_types, vocab.token_types);
  EXPECT_EQ(read->merges, vocab.merges);
  EXPECT_EQ(read->eos_id, 3);
  EXPECT_EQ(read->eot_id, 3);
  EXPECT_FALSE(read->bos_id.has_value());
  EXPECT_FALSE(read->add_bos);
  EXPECT_EQ(read->chat_template, vocab.chat_template);
}

TEST(VocabTest, SpmDefaultsWhenKeysAreAbsent) {
  Vocab vocab;
  vocab.kind = VocabKind::kSpm;
  vocab.tokens = {"<unk>", "<s>", "</s>", "a"};
  vocab.scores = {0, 0, 0, -1};
  // Only the keys a llama2.c conversion writes: no special ids, no add_bos.
  gguf::GgufWriter minimal;
  minimal.SetString("tokenizer.ggml.model", "llama");
  minimal.SetStringArray("tokenizer.ggml.tokens", vocab.tokens);
  minimal.SetF32Array("tokenizer.ggml.scores", vocab.scores);
  const std::vector<uint8_t> buffer = minimal.WriteToBuffer();
  auto file = gguf::GgufFile::Parse(buffer);
  ASSERT_TRUE(file.ok());
  auto read = ReadVocabFromGguf(*file);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->bos_id, 1);
  EXPECT_EQ(read->eos_id, 2);
  EXPECT_EQ(read->unk_id, 0);
  EXPECT_TRUE(read->add_bos);
  EXPECT_TRUE(read->add_space_prefix);
}

TEST(VocabTest, BpeAddBosDefaultDependsOnPreTokenizer) {
  for (const auto& [pre, expected] :
       std::vector<std::pair<std::string, bool>>{{"llama-bpe", true}, {"qwen2", false}}) {
    gguf::GgufWriter writer;
    writer.SetString("tokenizer.ggml.model", "gpt2");
    writer.SetString("tokenizer.ggml.pre", pre);
    writer.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
    writer.SetStringArray("tokenizer.ggml.merges", {"a b"});
    const std::vector<uint8_t> buffer = writer.WriteToBuffer();
    auto file = gguf::GgufFile::Parse(buffer);
    ASSERT_TRUE(file.ok());
    auto read = ReadVocabFromGguf(*file);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->add_bos, expected) << pre;
    EXPECT_FALSE(read->add_space_prefix);
  }
}

TEST(VocabTest, MissingTokenizerIsNotFound) {
  gguf::GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  const std::vector<uint8_t> buffer = writer.WriteToBuffer();
  auto file = gguf::GgufFile::Parse(buffer);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(ReadVocabFromGguf(*file).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reprise::tokenizer
