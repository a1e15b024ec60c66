#include "gguf/gguf_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>

#include "base/random.h"
#include "gguf/gguf_writer.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"

namespace reprise::gguf {
namespace {

std::vector<uint8_t> SmallFile() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.block_count", 2);
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "a", "b"});
  const float scores[] = {0.0f, -1.0f, -2.0f};
  w.SetF32Array("tokenizer.ggml.scores", scores);
  const int32_t types[] = {2, 1, 1};
  w.SetI32Array("tokenizer.ggml.token_type", types);
  std::vector<uint8_t> a(4 * 3 * 2);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i);
  EXPECT_TRUE(w.AddTensor("a", DType::kF32, {3, 2}, a).ok());
  std::vector<uint8_t> b(34 * 2, 7);  // two Q8_0 blocks
  EXPECT_TRUE(w.AddTensor("b", DType::kQ8_0, {64}, b).ok());
  return w.WriteToBuffer();
}

TEST(GgufFileTest, RoundTripsMetadataAndTensors) {
  std::vector<uint8_t> bytes = SmallFile();
  Result<GgufFile> file = GgufFile::Parse(bytes);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->data_offset() % 32, 0u);
  EXPECT_EQ(*file->GetString("general.architecture"), "llama");
  EXPECT_EQ(*file->GetU32("llama.block_count"), 2u);
  EXPECT_FLOAT_EQ(*file->GetF32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_TRUE(*file->GetBool("tokenizer.ggml.add_bos_token"));
  auto tokens = file->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ((*tokens)[2], "b");
  EXPECT_EQ((*file->GetF32Array("tokenizer.ggml.scores"))[2], -2.0f);
  EXPECT_EQ((*file->GetI32Array("tokenizer.ggml.token_type"))[0], 2);

  ASSERT_EQ(file->tensors().size(), 2u);
  const TensorInfo* a = file->FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(a->num_elements, 6u);
  EXPECT_EQ(a->num_rows(), 2u);
  EXPECT_EQ(a->size_bytes, 24u);
  EXPECT_EQ(a->data[5], 5);
  const TensorInfo* b = file->FindTensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kQ8_0);
  EXPECT_EQ(b->size_bytes, 68u);
  EXPECT_EQ(b->offset_bytes % 32, 0u);
  EXPECT_EQ(b->data[67], 7);
}

TEST(GgufFileTest, TypedAccessorsReportMissingAndWrongTypes) {
  std::vector<uint8_t> bytes = SmallFile();
  GgufFile file = std::move(GgufFile::Parse(bytes)).value();
  EXPECT_EQ(file.GetU32("nope").error().code(), StatusCode::kNotFound);
  EXPECT_EQ(file.GetU32("general.architecture").error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(file.GetString("llama.block_count").error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*file.GetU32Or("nope", 9), 9u);
  EXPECT_FALSE(file.GetU32Or("general.architecture", 9).ok());
  EXPECT_EQ(file.GetStringArray("tokenizer.ggml.scores").error().code(),
            StatusCode::kInvalidArgument);
}

TEST(GgufFileTest, WritesAndOpensFiles) {
  testing_support::TempDir dir;
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  std::vector<uint8_t> a(16, 1);
  ASSERT_TRUE(w.AddTensor("t", DType::kF32, {4}, a).ok());
  const std::string path = dir.path() + "/m.gguf";
  ASSERT_TRUE(w.WriteToFile(path).ok());
  Result<GgufFile> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->FindTensor("t")->data[0], 1);
}

TEST(GgufFileTest, WriterRejectsBadTensors) {
  GgufWriter w;
  EXPECT_FALSE(w.AddTensor("x", DType::kQ8_0, {33}, std::vector<uint8_t>(34)).ok());
  EXPECT_FALSE(w.AddTensor("x", DType::kF32, {4}, std::vector<uint8_t>(15)).ok());
  EXPECT_FALSE(w.AddTensor("x", DType::kF32, {}, {}).ok());
  EXPECT_TRUE(w.AddTensor("x", DType::kF32, {4}, std::vector<uint8_t>(16)).ok());
  EXPECT_FALSE(w.AddTensor("x", DType::kF32, {4}, std::vector<uint8_t>(16)).ok());
}

TEST(GgufFileTest, EveryTruncationIsAnError) {
  std::vector<uint8_t> bytes = SmallFile();
  // Only the padding after the last tensor may be cut without harm.
  Result<GgufFile> whole = GgufFile::Parse(bytes);
  ASSERT_TRUE(whole.ok());
  const TensorInfo* last = whole->FindTensor("b");
  const size_t end = last->offset_bytes + last->size_bytes;
  EXPECT_TRUE(GgufFile::Parse(std::span(bytes).first(end)).ok());
  for (size_t n = 0; n < end; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    Result<GgufFile> file = GgufFile::Parse(cut);
    ASSERT_FALSE(file.ok()) << "truncated to " << n << " bytes parsed";
    EXPECT_EQ(file.error().code(), StatusCode::kCorrupt) << file.error().ToString();
  }
}

void PutU64(std::vector<uint8_t>& bytes, size_t offset, uint64_t v) {
  std::memcpy(bytes.data() + offset, &v, 8);
}

TEST(GgufFileTest, RejectsBadHeaders) {
  std::vector<uint8_t> bytes = SmallFile();
  {
    auto b = bytes;
    b[0] = 'X';
    auto r = GgufFile::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("magic"), std::string::npos);
  }
  {
    auto b = bytes;
    b[4] = 7;
    EXPECT_FALSE(GgufFile::Parse(b).ok());
  }
  {
    auto b = bytes;
    b[4] = 1;
    EXPECT_EQ(GgufFile::Parse(b).error().code(), StatusCode::kUnimplemented);
  }
  {
    auto b = bytes;
    PutU64(b, 8, uint64_t{1} << 60);  // tensor count
    auto r = GgufFile::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("tensor count"), std::string::npos);
  }
  {
    auto b = bytes;
    PutU64(b, 16, ~uint64_t{0});  // metadata count
    auto r = GgufFile::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("offset 16"), std::string::npos) << r.error().ToString();
  }
  {
    auto b = bytes;
    PutU64(b, 24, uint64_t{1} << 62);  // first key length
    auto r = GgufFile::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("string length"), std::string::npos);
  }
}

// Builds a file by hand so that single fields can be set to bad values.
std::vector<uint8_t> OneTensorFile(uint32_t num_dims, uint64_t dim0, uint32_t dtype,
                                   uint64_t offset, uint32_t kv_type = 4) {
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t n) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u64 = [&](uint64_t v) { put(&v, 8); };
  auto str = [&](std::string_view s) {
    u64(s.size());
    put(s.data(), s.size());
  };
  u32(kMagic);
  u32(3);
  u64(1);
  u64(1);
  str("k");
  u32(kv_type);
  u32(5);
  str("t");
  u32(num_dims);
  for (uint32_t i = 0; i < num_dims; ++i) u64(i == 0 ? dim0 : 1);
  u32(dtype);
  u64(offset);
  while (b.size() % 32) b.push_back(0);
  b.resize(b.size() + 64, 0);
  return b;
}

TEST(GgufFileTest, RejectsBadTensorEntries) {
  EXPECT_TRUE(GgufFile::Parse(OneTensorFile(1, 16, 0, 0)).ok());
  auto expect_error = [](std::vector<uint8_t> b, std::string_view needle) {
    auto r = GgufFile::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().ToString();
  };
  expect_error(OneTensorFile(0, 16, 0, 0), "dimensions");
  expect_error(OneTensorFile(5, 16, 0, 0), "dimensions");
  expect_error(OneTensorFile(1, 0, 0, 0), "zero");
  expect_error(OneTensorFile(1, 17, 0, 0), "past the end");
  expect_error(OneTensorFile(1, uint64_t{1} << 62, 0, 0), "dims[0]");
  expect_error(OneTensorFile(1, 16, 4, 0), "unknown ggml type");
  expect_error(OneTensorFile(1, 16, 99, 0), "unknown ggml type");
  expect_error(OneTensorFile(1, 16, 8, 0), "not a multiple of its block");
  expect_error(OneTensorFile(1, 16, 0, 3), "alignment");
  expect_error(OneTensorFile(1, 16, 0, ~uint64_t{0} - 31), "past the end");
  expect_error(OneTensorFile(1, 16, 0, 0, 13), "unknown value type");
}

TEST(GgufFileTest, RandomMutationsNeverCrash) {
  std::vector<uint8_t> bytes = SmallFile();
  Random rng(42);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> b = bytes;
    const int flips = 1 + static_cast<int>(rng.NextBelow(4));
    for (int f = 0; f < flips; ++f) {
      b[rng.NextBelow(b.size())] = static_cast<uint8_t>(rng.NextU64());
    }
    Result<GgufFile> file = GgufFile::Parse(b);
    if (file.ok()) {
      ++parsed;
      for (const TensorInfo& t : file->tensors()) {
        ASSERT_LE(t.offset_bytes + t.size_bytes, b.size());
      }
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(GgufFileTest, ParsesTrainedStoriesModel) {
  REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
  Result<GgufFile> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(*file->GetString("general.architecture"), "llama");
  EXPECT_EQ(*file->GetU32("llama.embedding_length"), 64u);
  EXPECT_EQ(*file->GetU32("llama.block_count"), 5u);
  EXPECT_EQ(file->tensors().size(), 48u);
  EXPECT_EQ(file->GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  const TensorInfo* embd = file->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 512}));
}

// Issue 12: tensors whose data overlapped another's were accepted. Two tensors without
// metadata: 24 header bytes, then each directory entry is 8 + 1 (name) + 4 + 8 (one dim) +
// 4 (type) + 8 (data offset) = 33 bytes, so tensor b's data offset is at 24 + 33 + 25.
TEST(GgufFileTest, RejectsOverlappingTensorData) {
  GgufWriter w;
  ASSERT_TRUE(w.AddTensor("a", DType::kF32, {16}, std::vector<uint8_t>(64, 1)).ok());
  ASSERT_TRUE(w.AddTensor("b", DType::kF32, {16}, std::vector<uint8_t>(64, 2)).ok());
  const std::vector<uint8_t> bytes = w.WriteToBuffer();
  const size_t b_offset_field = 24 + 33 + 25;
  uint64_t b_relative;
  std::memcpy(&b_relative, bytes.data() + b_offset_field, 8);
  ASSERT_EQ(b_relative, 64u);  // the layout this test assumes
  ASSERT_TRUE(GgufFile::Parse(bytes).ok());
  for (uint64_t relative : {uint64_t{0}, uint64_t{32}}) {  // b on a, b across a's second half
    auto b = bytes;
    PutU64(b, b_offset_field, relative);
    Result<GgufFile> file = GgufFile::Parse(b);
    ASSERT_FALSE(file.ok()) << "b at " << relative;
    EXPECT_EQ(file.error().code(), StatusCode::kCorrupt);
    EXPECT_NE(file.error().message().find("overlaps"), std::string::npos)
        << file.error().ToString();
  }
  // Adjacent is fine: a at 64, b at 0.
  auto swapped = bytes;
  PutU64(swapped, 24 + 25, 64);
  PutU64(swapped, b_offset_field, 0);
  EXPECT_TRUE(GgufFile::Parse(swapped).ok());
}

// Issue 12: a FIFO as the model path hung in open() (no writer ever comes). It must be
// refused at once, as must a directory and a character device.
TEST(GgufFileTest, OpenRefusesFifosDirectoriesAndDevices) {
  testing_support::TempDir dir;
  const std::string fifo = dir.path() + "/model.gguf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<GgufFile> from_fifo = GgufFile::Open(fifo);
  ASSERT_FALSE(from_fifo.ok());
  EXPECT_EQ(from_fifo.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(from_fifo.error().message().find("FIFO"), std::string::npos)
      << from_fifo.error().ToString();
  EXPECT_EQ(GgufFile::Open(dir.path()).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GgufFile::Open("/dev/null").error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::gguf
