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

// A small SPM vocabulary's GGUF with one special id key set by `set`.
template <typename SetFn>
Result<Vocab> ReadWithId(SetFn set, std::vector<uint8_t>& buffer) {
  gguf::GgufWriter writer;
  writer.SetString("tokenizer.ggml.model", "llama");
  writer.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  set(writer);
  buffer = writer.WriteToBuffer();
  REPRISE_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Parse(buffer));
  return ReadVocabFromGguf(file);
}

// Issue 12: an out-of-range BOS/EOS/unknown id used to be dropped silently (and the default
// id 1/2/0 was not applied either), so a broken file loaded with no BOS or no EOS.
TEST(VocabTest, RejectsOutOfRangeBosEosUnk) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id"}) {
    std::vector<uint8_t> buffer;
    auto past_end = ReadWithId([&](gguf::GgufWriter& w) { w.SetU32(key, 4); }, buffer);
    ASSERT_FALSE(past_end.ok()) << key;
    EXPECT_EQ(past_end.status().code(), StatusCode::kCorrupt) << key;
    EXPECT_NE(past_end.status().message().find(key), std::string::npos)
        << past_end.status().ToString();
    auto huge = ReadWithId([&](gguf::GgufWriter& w) { w.SetU64(key, uint64_t{1} << 40); }, buffer);
    EXPECT_EQ(huge.status().code(), StatusCode::kCorrupt) << key;
    auto negative = ReadWithId([&](gguf::GgufWriter& w) { w.SetI32(key, -7); }, buffer);
    EXPECT_EQ(negative.status().code(), StatusCode::kCorrupt) << key;
  }
}

TEST(VocabTest, MinusOneMeansNoSpecialToken) {
  std::vector<uint8_t> buffer;
  auto signed_none =
      ReadWithId([](gguf::GgufWriter& w) { w.SetI32("tokenizer.ggml.bos_token_id", -1); }, buffer);
  ASSERT_TRUE(signed_none.ok()) << signed_none.status().ToString();
  EXPECT_FALSE(signed_none->bos_id.has_value());
  auto unsigned_none = ReadWithId(
      [](gguf::GgufWriter& w) { w.SetU32("tokenizer.ggml.eos_token_id", 0xFFFFFFFFu); }, buffer);
  ASSERT_TRUE(unsigned_none.ok()) << unsigned_none.status().ToString();
  EXPECT_FALSE(unsigned_none->eos_id.has_value());
}

TEST(VocabTest, DropsOutOfRangeEotEomPad) {
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                          "tokenizer.ggml.padding_token_id"}) {
    std::vector<uint8_t> buffer;
    auto read = ReadWithId([&](gguf::GgufWriter& w) { w.SetU32(key, 4); }, buffer);
    ASSERT_TRUE(read.ok()) << key << ": " << read.status().ToString();
    EXPECT_FALSE(read->eot_id.has_value());
    EXPECT_FALSE(read->eom_id.has_value());
    EXPECT_FALSE(read->pad_id.has_value());
    EXPECT_EQ(read->bos_id, 1);  // the others keep their defaults
  }
}

}  // namespace
}  // namespace reprise::tokenizer
