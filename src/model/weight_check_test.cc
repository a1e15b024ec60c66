#include "model/weight_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "kernels/quant_blocks.h"
#include "model/packed_weights.h"
#include "model/reference_model.h"
#include "model/test_model_builder.h"

namespace reprise::model {
namespace {

constexpr uint16_t kF16Nan = 0x7e00, kF16Inf = 0x7c00, kF16One = 0x3c00;

// A one-tensor file holding `bytes` as `dtype` with `elements` values.
std::vector<uint8_t> OneTensor(DType dtype, uint64_t elements, const std::vector<uint8_t>& bytes) {
  gguf::GgufWriter w;
  EXPECT_TRUE(w.AddTensor("t", dtype, {elements}, bytes).ok());
  return w.WriteToBuffer();
}

Status Check(DType dtype, uint64_t elements, const std::vector<uint8_t>& bytes) {
  const std::vector<uint8_t> file_bytes = OneTensor(dtype, elements, bytes);
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(file_bytes);
  if (!file.ok()) return file.error();
  return CheckWeightsFinite(*file);
}

template <typename T>
void Put(std::vector<uint8_t>& bytes, size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

TEST(WeightCheckTest, FindsNonFiniteFloats) {
  const size_t n = 10000;  // more than one scan slice
  std::vector<uint8_t> f32(n * 4);
  for (size_t i = 0; i < n; ++i) Put(f32, 4 * i, 0.5f * static_cast<float>(i));
  EXPECT_TRUE(Check(DType::kF32, n, f32).ok());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    auto b = f32;
    Put(b, 4 * 9000, bad);
    Status s = Check(DType::kF32, n, b);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt);
    EXPECT_NE(s.message().find("index 9000"), std::string::npos) << s.ToString();
  }
  std::vector<uint8_t> f16(n * 2);
  for (size_t i = 0; i < n; ++i) Put<uint16_t>(f16, 2 * i, kF16One);
  EXPECT_TRUE(Check(DType::kF16, n, f16).ok());
  for (uint16_t bad : {kF16Nan, kF16Inf, uint16_t{0xfc00}}) {
    auto b = f16;
    Put(b, 2 * 5, bad);
    EXPECT_EQ(Check(DType::kF16, n, b).code(), StatusCode::kCorrupt);
  }
  std::vector<uint8_t> bf16(n * 2);
  for (size_t i = 0; i < n; ++i) Put<uint16_t>(bf16, 2 * i, 0x3f80);  // 1.0
  EXPECT_TRUE(Check(DType::kBF16, n, bf16).ok());
  Put<uint16_t>(bf16, 2 * (n - 1), 0x7fc0);  // NaN
  EXPECT_EQ(Check(DType::kBF16, n, bf16).code(), StatusCode::kCorrupt);
  // 0x7c00 is a finite bfloat16 (a large number); only the all-ones exponent counts.
  Put<uint16_t>(bf16, 2 * (n - 1), 0x7c00);
  EXPECT_TRUE(Check(DType::kBF16, n, bf16).ok());
}

TEST(WeightCheckTest, FindsNonFiniteBlockScales) {
  struct Case {
    DType dtype;
    size_t block_bytes;
    uint64_t block_elements;
    std::vector<size_t> scale_offsets;
  };
  using namespace kernels;
  const Case cases[] = {
      {DType::kQ4_0, sizeof(BlockQ4_0), 32, {offsetof(BlockQ4_0, d)}},
      {DType::kQ4_1, sizeof(BlockQ4_1), 32, {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)}},
      {DType::kQ5_0, sizeof(BlockQ5_0), 32, {offsetof(BlockQ5_0, d)}},
      {DType::kQ5_1, sizeof(BlockQ5_1), 32, {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)}},
      {DType::kQ8_0, sizeof(BlockQ8_0), 32, {offsetof(BlockQ8_0, d)}},
      {DType::kQ2_K, sizeof(BlockQ2_K), 256, {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}},
      {DType::kQ3_K, sizeof(BlockQ3_K), 256, {offsetof(BlockQ3_K, d)}},
      {DType::kQ4_K, sizeof(BlockQ4_K), 256, {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}},
      {DType::kQ5_K, sizeof(BlockQ5_K), 256, {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}},
      {DType::kQ6_K, sizeof(BlockQ6_K), 256, {offsetof(BlockQ6_K, d)}},
  };
  for (const Case& c : cases) {
    const size_t blocks = 3;
    // Quant bytes of 0xff everywhere (never a concern), finite scales.
    std::vector<uint8_t> good(blocks * c.block_bytes, 0xff);
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t off : c.scale_offsets) Put<uint16_t>(good, b * c.block_bytes + off, kF16One);
    }
    EXPECT_TRUE(Check(c.dtype, blocks * c.block_elements, good).ok()) << DTypeName(c.dtype);
    for (size_t off : c.scale_offsets) {
      auto bad = good;
      Put<uint16_t>(bad, 2 * c.block_bytes + off, kF16Nan);
      Status s = Check(c.dtype, blocks * c.block_elements, bad);
      EXPECT_EQ(s.code(), StatusCode::kCorrupt) << DTypeName(c.dtype) << " offset " << off;
      EXPECT_NE(s.message().find("block scale at index 2"), std::string::npos) << s.ToString();
    }
  }
}

// Issue 12: a model with a NaN weight loaded silently (every logit then NaN).
TEST(WeightCheckTest, ModelsWithANanWeightDoNotLoad) {
  for (DType dtype : {DType::kF32, DType::kF16}) {
    TestModelSpec spec;
    spec.matrix_dtype = dtype;
    TestModel model = MakeTestModel(spec);
    const std::vector<uint8_t> good_bytes = TestModelBytes(model);
    TestTensor* wq = model.Find(tensor_names::Layer(1, "attn_q.weight"));
    ASSERT_NE(wq, nullptr);
    wq->values[7] = std::numeric_limits<float>::quiet_NaN();
    wq->bytes.clear();
    const std::vector<uint8_t> bad_bytes = TestModelBytes(model);

    Result<gguf::GgufFile> good = gguf::GgufFile::Parse(good_bytes);
    Result<gguf::GgufFile> bad = gguf::GgufFile::Parse(bad_bytes);
    ASSERT_TRUE(good.ok() && bad.ok());
    EXPECT_TRUE(ReferenceModel::Load(*good).ok());
    Result<ReferenceModel> reference = ReferenceModel::Load(*bad);
    ASSERT_FALSE(reference.ok());
    EXPECT_EQ(reference.error().code(), StatusCode::kCorrupt);
    EXPECT_NE(reference.error().message().find("blk.1.attn_q.weight"), std::string::npos)
        << reference.error().ToString();

    auto pool = ThreadPool::Create();
    ASSERT_TRUE(pool.ok());
    Result<ModelConfig> config = ModelConfig::FromGguf(*bad);
    ASSERT_TRUE(config.ok());
    EXPECT_TRUE(PackedWeights::Create(*good, *config, **pool).ok());
    auto packed = PackedWeights::Create(*bad, *config, **pool);
    ASSERT_FALSE(packed.ok());
    EXPECT_EQ(packed.error().code(), StatusCode::kCorrupt) << packed.error().ToString();
  }
}

}  // namespace
}  // namespace reprise::model
