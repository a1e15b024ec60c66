#include "engine/loaded_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "convert/model_maker.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

// Flips the lowest bit of the last float of the largest tensor: a change far past the first
// 4 KiB of any tensor that leaves every weight finite.
void FlipLastWeightBit(const std::string& path) {
  uint64_t offset = 0;
  {
    Result<std::unique_ptr<LoadedModel>> model = LoadedModel::Load(path);
    ASSERT_TRUE(model.ok()) << model.error().ToString();
    const gguf::TensorInfo* largest = nullptr;
    for (const gguf::TensorInfo& t : (*model)->file().tensors()) {
      if (!largest || t.size_bytes > largest->size_bytes) largest = &t;
    }
    ASSERT_NE(largest, nullptr);
    ASSERT_GT(largest->size_bytes, 8192u);
    ASSERT_EQ(largest->dtype, DType::kF32);
    offset = largest->offset_bytes + largest->size_bytes - 4;
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  f.read(&byte, 1);
  byte ^= 1;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&byte, 1);
  ASSERT_TRUE(f.good());
}

TEST(LoadedModelTest, FingerprintCoversEveryTensorByte) {
  testing_support::TempDir dir;
  convert::MakeModelOptions options;
  options.shape = "tiny";
  options.weight_type = DType::kF32;
  const std::string a = dir.path() + "/a.gguf", b = dir.path() + "/b.gguf";
  ASSERT_TRUE(convert::MakeModel(options, a).ok());
  std::filesystem::copy_file(a, b);

  Result<std::unique_ptr<LoadedModel>> first = LoadedModel::Load(a);
  Result<std::unique_ptr<LoadedModel>> copy = LoadedModel::Load(b);
  ASSERT_TRUE(first.ok() && copy.ok());
  EXPECT_EQ((*first)->fingerprint(), (*copy)->fingerprint()) << "same bytes, same identity";

  FlipLastWeightBit(b);
  Result<std::unique_ptr<LoadedModel>> changed = LoadedModel::Load(b);
  ASSERT_TRUE(changed.ok()) << changed.error().ToString();
  EXPECT_NE((*first)->fingerprint(), (*changed)->fingerprint())
      << "a weight past the first 4 KiB of its tensor changed the model; its KV must not match";
}

}  // namespace
}  // namespace reprise::engine
