#include "convert/llama2c_importer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "base/file_util.h"
#include "gguf/gguf_file.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {
namespace {

// The llama2.c files and stories260K.gguf hold the same weights and vocabulary (SOURCES.md),
// so importing the .bin must reproduce the GGUF tensor for tensor.
TEST(Llama2cImporterTest, ImportEqualsPublishedGguf) {
  REPRISE_REQUIRE_SHARED_FILE(bin, "models/stories260K/stories260K.bin");
  REPRISE_REQUIRE_SHARED_FILE(tok, "models/stories260K/tok512.bin");
  REPRISE_REQUIRE_SHARED_FILE(gguf_path, "models/stories260K/stories260K.gguf");
  testing_support::TempDir dir;
  const std::string out = dir.path() + "/s.gguf";
  Result<ImportSummary> summary = ImportLlama2c(bin, tok, out, {});
  ASSERT_TRUE(summary.ok()) << summary.error().ToString();
  EXPECT_EQ(summary->vocab_size, 512);

  gguf::GgufFile ours = std::move(gguf::GgufFile::Open(out)).value();
  gguf::GgufFile theirs = std::move(gguf::GgufFile::Open(gguf_path)).value();
  ASSERT_EQ(ours.tensors().size(), theirs.tensors().size());
  for (const gguf::TensorInfo& t : theirs.tensors()) {
    const gguf::TensorInfo* mine = ours.FindTensor(t.name);
    ASSERT_NE(mine, nullptr) << t.name;
    EXPECT_EQ(mine->dims, t.dims) << t.name;
    EXPECT_EQ(mine->dtype, t.dtype) << t.name;
    ASSERT_EQ(mine->size_bytes, t.size_bytes) << t.name;
    EXPECT_EQ(std::memcmp(mine->data.data(), t.data.data(), t.size_bytes), 0) << t.name;
  }
  for (const char* key : {"llama.embedding_length", "llama.feed_forward_length",
                          "llama.block_count", "llama.attention.head_count",
                          "llama.attention.head_count_kv", "llama.rope.dimension_count"}) {
    EXPECT_EQ(*ours.GetU32(key), *theirs.GetU32(key)) << key;
  }
  EXPECT_EQ(*ours.GetU32("llama.context_length"), 512u);  // the trained context, from the header
  tokenizer::Vocab a = std::move(tokenizer::ReadVocabFromGguf(ours)).value();
  tokenizer::Vocab b = std::move(tokenizer::ReadVocabFromGguf(theirs)).value();
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.token_types, b.token_types);
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
  EXPECT_EQ(a.unk_id, b.unk_id);
}

TEST(Llama2cImporterTest, RejectsTruncatedAndBadHeaders) {
  REPRISE_REQUIRE_SHARED_FILE(bin, "models/stories260K/stories260K.bin");
  REPRISE_REQUIRE_SHARED_FILE(tok, "models/stories260K/tok512.bin");
  testing_support::TempDir dir;
  std::string bytes = std::move(ReadFileToString(bin)).value();
  const std::string cut = dir.path() + "/cut.bin";
  ASSERT_TRUE(WriteFileAtomically(cut, std::string_view(bytes).substr(0, bytes.size() - 4)).ok());
  Result<ImportSummary> r = ImportLlama2c(cut, tok, dir.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.error().message().find("header implies"), std::string::npos);

  std::string bad = bytes;
  const int32_t huge = 1 << 30;
  std::memcpy(bad.data() + 8, &huge, 4);  // n_layers
  const std::string bad_path = dir.path() + "/bad.bin";
  ASSERT_TRUE(WriteFileAtomically(bad_path, bad).ok());
  r = ImportLlama2c(bad_path, tok, dir.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("out of range"), std::string::npos);

  std::string tok_bytes = std::move(ReadFileToString(tok)).value();
  const std::string cut_tok = dir.path() + "/tok.bin";
  ASSERT_TRUE(WriteFileAtomically(cut_tok, std::string_view(tok_bytes).substr(0, 100)).ok());
  r = ImportLlama2c(bin, cut_tok, dir.path() + "/o.gguf", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kCorrupt);
  EXPECT_FALSE(std::ifstream(dir.path() + "/o.gguf").good());  // nothing half-written
}

}  // namespace
}  // namespace reprise::convert
