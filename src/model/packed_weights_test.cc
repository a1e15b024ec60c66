#include "model/packed_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/packed_matrix.h"
#include "model/test_model_builder.h"

namespace reprise::model {
namespace {

// Q6_K matrices are packed as Q6_Kx8 (bit for bit) by default, the layers' into the format a
// kernel set prefers when PackOptions::q6_k_format says so (Q8_0x8: within half a Q8_0 step of
// the file's values), and into the forced format when there is one.
TEST(PackedWeightsTest, Q6KMatricesGoWhereTheOptionsSay) {
  TestModelSpec spec;
  spec.num_layers = 1;
  spec.embedding_dim = 256;
  spec.ffn_dim = 256;
  spec.num_heads = 4;
  spec.num_kv_heads = 2;
  spec.vocab_size = 32;
  spec.matrix_dtype = DType::kQ6_K;
  const TestModel model = MakeTestModel(spec);
  const std::vector<uint8_t> bytes = TestModelBytes(model);
  Result<gguf::GgufFile> file = gguf::GgufFile::Parse(bytes);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  Result<ModelConfig> config = ModelConfig::FromGguf(*file);
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  auto pool = ThreadPool::Create({.num_threads = 2});
  ASSERT_TRUE(pool.ok());
  struct Case {
    std::optional<kernels::PackedFormat> q6_k_format, force_format;
    kernels::PackedFormat want;
  };
  for (const Case& c :
       {Case{std::nullopt, std::nullopt, kernels::PackedFormat::kQ6_Kx8},
        Case{kernels::PackedFormat::kQ8_0x8, std::nullopt, kernels::PackedFormat::kQ8_0x8},
        Case{kernels::PackedFormat::kQ8_0x8, kernels::PackedFormat::kF16x8,
             kernels::PackedFormat::kF16x8}}) {
    SCOPED_TRACE(kernels::PackedFormatName(c.want));
    PackOptions options;
    options.q6_k_format = c.q6_k_format;
    options.force_format = c.force_format;
    Result<std::unique_ptr<PackedWeights>> packed =
        PackedWeights::Create(*file, *config, **pool, options);
    ASSERT_TRUE(packed.ok()) << packed.error().ToString();
    const OwnedPackedMatrix& down = *(*packed)->layer(0).down;
    ASSERT_EQ(down.view.format, c.want);
    // The output projection, one row per decode step, keeps Q6_Kx8 unless forced.
    EXPECT_EQ((*packed)->output().view.format,
              c.force_format.value_or(kernels::PackedFormat::kQ6_Kx8));
    const TestTensor& source = model.Get("blk.0.ffn_down.weight");
    const int64_t cols = down.view.cols;
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < down.view.rows; ++r) {
      kernels::UnpackRow(down.view, r, row.data());
      const float* exact = source.values.data() + r * cols;
      for (int64_t b = 0; b < cols / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(exact[b * 32 + j]));
        // Q6_Kx8 holds the file's values; Q8_0x8 is within 0.57 of its step (packed_matrix
        // _test); F16 within its rounding.
        const float bound = c.want == kernels::PackedFormat::kQ6_Kx8   ? 0.0f
                            : c.want == kernels::PackedFormat::kQ8_0x8 ? 0.57f * amax / 127.0f
                                                                       : amax * 0x1p-11f;
        for (int j = 0; j < 32; ++j) {
          ASSERT_LE(std::fabs(row[b * 32 + j] - exact[b * 32 + j]), bound)
              << "row " << r << " column " << b * 32 + j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace reprise::model
