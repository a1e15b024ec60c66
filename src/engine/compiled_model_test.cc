#include "engine/compiled_model.h"

#include <gtest/gtest.h>

#include "convert/model_maker.h"
#include "engine/graph_backend.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

class CompiledModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    convert::MakeModelOptions options;
    options.shape = "tiny";
    options.weight_type = DType::kF32;
    ASSERT_TRUE(convert::MakeModel(options, dir_.path() + "/tiny.gguf").ok());
    Result<std::unique_ptr<LoadedModel>> model = LoadedModel::Load(dir_.path() + "/tiny.gguf");
    ASSERT_TRUE(model.ok());
    model_ = std::move(model).value();
  }
  testing_support::TempDir dir_;
  std::unique_ptr<LoadedModel> model_;
};

TEST_F(CompiledModelTest, SessionsShareWeightsAndGraphsAndOwnTheirKv) {
  Result<std::shared_ptr<const CompiledModel>> compiled =
      CompiledModel::Create(*model_, CompiledModelOptions{.num_threads = 2});
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ((*compiled)->graphs_compiled(), 0);
  GraphBackendOptions options;
  options.context_tokens = 256;
  options.prefill_capacity = 32;
  options.recompute_capacity = 64;
  Result<std::unique_ptr<GraphBackend>> a = GraphBackend::Create(*compiled, options);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  EXPECT_EQ((*compiled)->graphs_compiled(), 3);  // prefill, decode, recompute
  Result<std::unique_ptr<GraphBackend>> b = GraphBackend::Create(*compiled, options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*compiled)->graphs_compiled(), 3);  // the second session compiles nothing
  EXPECT_EQ(&(*a)->weights(), &(*b)->weights());
  EXPECT_EQ(&(*a)->prefill_graph(), &(*b)->prefill_graph());
  EXPECT_NE(&(*a)->kv_cache(), &(*b)->kv_cache());
  // Another ratio is another static shape: one more recompute graph.
  options.recompute_ratio = 0.5;
  ASSERT_TRUE(GraphBackend::Create(*compiled, options).ok());
  EXPECT_EQ((*compiled)->graphs_compiled(), 4);

  // Sessions run side by side without touching each other's sequence.
  const int32_t prompt[] = {1, 5, 9, 14, 3, 7};
  const int32_t other[] = {1, 8, 8, 2};
  Result<std::span<const float>> la = (*a)->Append(prompt);
  ASSERT_TRUE(la.ok());
  const std::vector<float> logits_a(la->begin(), la->end());
  ASSERT_TRUE((*b)->Append(other).ok());
  EXPECT_EQ((*a)->num_tokens(), 6);
  EXPECT_EQ((*b)->num_tokens(), 4);
  (*a)->Truncate(0);
  Result<std::span<const float>> again = (*a)->Append(prompt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::vector<float>(again->begin(), again->end()), logits_a);
}

}  // namespace
}  // namespace reprise::engine
