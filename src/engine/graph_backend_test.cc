#include "engine/graph_backend.h"

#include <gtest/gtest.h>

#include <cmath>

#include "convert/model_maker.h"
#include "engine/reference_backend.h"
#include "support/shared_data.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

// Relative L2 error of a against b.
double RelativeError(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

std::vector<int32_t> Prompt(int n, int vocab, int seed) {
  std::vector<int32_t> tokens;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<int32_t>(3 + x % static_cast<uint32_t>(vocab - 3)));
  }
  return tokens;
}

struct Case {
  std::string label;
  std::string path;
  double tolerance;  // relative L2 error of the logits
};

// Runs prompt + 4 decode steps through both backends and compares every step's logits.
void CompareWithReference(const Case& c, const GraphBackendOptions& options,
                          const std::vector<int>& prompt_lengths) {
  std::unique_ptr<LoadedModel> model = std::move(LoadedModel::Load(c.path)).value();
  auto graphs = GraphBackend::Create(*model, options);
  ASSERT_TRUE(graphs.ok()) << graphs.error().ToString();
  auto reference = std::move(ReferenceBackend::Create(*model, options.context_tokens)).value();
  for (int length : prompt_lengths) {
    (*graphs)->Truncate(0);
    reference->Truncate(0);
    std::vector<int32_t> prompt = Prompt(length, model->config().vocab_size, length);
    auto a = (*graphs)->Append(prompt);
    ASSERT_TRUE(a.ok()) << a.error().ToString();
    std::vector<float> graph_logits(a->begin(), a->end());
    std::vector<float> ref_logits = [&] {
      auto r = std::move(reference->Append(prompt)).value();
      return std::vector<float>(r.begin(), r.end());
    }();
    EXPECT_LT(RelativeError(graph_logits, ref_logits), c.tolerance)
        << c.label << ": prompt of " << length << " tokens";
    for (int step = 0; step < 4; ++step) {
      const int32_t next[] = {static_cast<int32_t>(
          std::max_element(ref_logits.begin(), ref_logits.end()) - ref_logits.begin())};
      auto g = std::move((*graphs)->Append(next)).value();
      auto r = std::move(reference->Append(next)).value();
      graph_logits.assign(g.begin(), g.end());
      ref_logits.assign(r.begin(), r.end());
      EXPECT_LT(RelativeError(graph_logits, ref_logits), c.tolerance)
          << c.label << ": decode step " << step << " after " << length;
    }
    EXPECT_EQ((*graphs)->num_tokens(), length + 4);
  }
}

class GraphBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing_support::TempDir();
    for (const char* shape : {"tiny", "tiny-qwen2", "tiny-qwen3", "tiny-256"}) {
      for (DType type : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ3_K,
                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        convert::MakeModelOptions options;
        options.shape = shape;
        options.weight_type = type;
        const std::string path =
            dir_->path() + "/" + shape + "-" + std::string(DTypeName(type)) + ".gguf";
        ASSERT_TRUE(convert::MakeModel(options, path).ok());
      }
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Path(const std::string& shape, DType type) {
    return dir_->path() + "/" + shape + "-" + std::string(DTypeName(type)) + ".gguf";
  }
  static testing_support::TempDir* dir_;
};
testing_support::TempDir* GraphBackendTest::dir_ = nullptr;

// Tolerances: float weights differ from the reference only by f16 KV storage and summation
// order; int8-activation formats add the activations' quantization error.
double ToleranceFor(DType type) {
  switch (type) {
    case DType::kF32:
      return 2e-3;
    case DType::kF16:
      return 2e-3;
    default:
      return 3e-2;
  }
}

TEST_F(GraphBackendTest, MatchesReferenceForEveryArchitectureAndType) {
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  for (const char* shape : {"tiny", "tiny-qwen2", "tiny-qwen3", "tiny-256"}) {
    for (DType type : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ3_K,
                       DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
      // Shorter than, equal to and longer than the prefill capacity.
      CompareWithReference({std::string(shape) + "/" + std::string(DTypeName(type)),
                            Path(shape, type), ToleranceFor(type)},
                           options, {5, 16, 37});
    }
  }
}

TEST_F(GraphBackendTest, ScalarKernelsAndStrictShapesGiveTheSameLogits) {
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  options.scalar_kernels = true;
  CompareWithReference({"tiny-qwen3 scalar", Path("tiny-qwen3", DType::kQ8_0), 3e-2}, options,
                       {7, 20});
  // The scalar set packs Q3_K into Q6_Kx8 (exactly) for every matrix, as AVX2 does.
  CompareWithReference({"tiny-256 q3_K scalar", Path("tiny-256", DType::kQ3_K), 3e-2}, options,
                       {7, 20});
  options.scalar_kernels = false;
  options.strict_shapes = true;
  CompareWithReference({"tiny strict", Path("tiny", DType::kF16), 2e-3}, options, {3, 16, 21});
}

// How a call's queries are cut into attention blocks depends on the thread count (the blocks
// are sized so that the threads share them evenly); a query's result never does: the logits
// of every prompt length, in one call or several, are bit-identical on 1, 2 and 3 threads.
TEST_F(GraphBackendTest, ThreadCountsGiveBitIdenticalLogits) {
  for (const char* shape : {"tiny", "tiny-qwen3"}) {
    std::unique_ptr<LoadedModel> model =
        std::move(LoadedModel::Load(Path(shape, DType::kQ8_0))).value();
    std::vector<std::vector<float>> by_threads;
    for (int threads : {1, 2, 3}) {
      GraphBackendOptions options;
      options.context_tokens = 512;
      options.prefill_capacity = 96;
      options.num_threads = threads;
      auto backend = GraphBackend::Create(*model, options);
      ASSERT_TRUE(backend.ok()) << backend.error().ToString();
      std::vector<float> all;
      for (int length : {9, 40, 96, 250}) {
        (*backend)->Truncate(0);
        auto logits = (*backend)->Append(Prompt(length, model->config().vocab_size, length));
        ASSERT_TRUE(logits.ok()) << logits.error().ToString();
        all.insert(all.end(), logits->begin(), logits->end());
      }
      by_threads.push_back(std::move(all));
    }
    EXPECT_EQ(by_threads[0], by_threads[1]) << shape;
    EXPECT_EQ(by_threads[0], by_threads[2]) << shape;
  }
}

TEST_F(GraphBackendTest, ForcedQ8PackingOfFloatWeights) {
  GraphBackendOptions options;
  options.context_tokens = 32;
  options.prefill_capacity = 8;
  options.pack.force_format = kernels::PackedFormat::kQ8_0x8;
  CompareWithReference({"tiny f16 as q8", Path("tiny", DType::kF16), 3e-2}, options, {11});
}

// The op profile of `bench prefill`: every multiply-add of the projections and the head is
// counted once (rows x N x K), attention and the other ops take time, and turning the profile
// off stops the counting.
TEST_F(GraphBackendTest, OpTimesCountEveryMatmulMultiplyAdd) {
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(Path("tiny-qwen3", DType::kQ8_0))).value();
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  auto backend = std::move(GraphBackend::Create(*model, options)).value();
  graph::OpTimes times;
  backend->set_op_times(&times);
  const int length = 21;  // two calls: 16 rows, then 5
  ASSERT_TRUE(backend->Append(Prompt(length, model->config().vocab_size, 3)).ok());
  backend->set_op_times(nullptr);
  const model::ModelConfig& c = model->config();
  const double per_row_layer =
      static_cast<double>(c.embedding_dim) * (c.q_dim() + 2.0 * c.kv_dim() + 3.0 * c.ffn_dim) +
      static_cast<double>(c.q_dim()) * c.embedding_dim;
  const double head = static_cast<double>(c.vocab_size) * c.embedding_dim;  // last row, per call
  EXPECT_DOUBLE_EQ(times.matmul_macs, length * c.num_layers * per_row_layer + 2 * head);
  EXPECT_GT(times.matmul_ms, 0.0);
  EXPECT_GT(times.attention_ms, 0.0);
  EXPECT_GT(times.other_ms, 0.0);
  // Q8_0 layers multiply int8 products.
  EXPECT_GE(times.matmul_int8_macs, length * c.num_layers * per_row_layer);
  EXPECT_LE(times.matmul_int8_macs, times.matmul_macs);
  EXPECT_GT(times.matmul_int8_ms, 0.0);
  EXPECT_LE(times.matmul_int8_ms, times.matmul_ms);
  const double counted = times.matmul_macs;
  ASSERT_TRUE(backend->Append(Prompt(3, c.vocab_size, 4)).ok());
  EXPECT_EQ(times.matmul_macs, counted);
}

// Static shapes: a call computes its full capacity (padding rows included; a recompute
// call's selected phase its full ceil(r * Ls) rows even when adaptive recompute keeps fewer),
// so its work does not depend on how many tokens it holds; results are those of the dynamic
// path, bit for bit.
TEST_F(GraphBackendTest, StaticShapesComputeEveryPaddingRowAndChangeNoResult) {
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(Path("tiny-qwen3", DType::kQ8_0))).value();
  const int vocab = model->config().vocab_size;
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  options.recompute_capacity = 16;
  options.recompute_ratio = 0.25;
  options.check_layer = 1;
  options.recompute_min_deviation = 0.5;  // rows recomputed over their own KV barely deviate
  auto dynamic = std::move(GraphBackend::Create(*model, options)).value();
  auto full = std::move(GraphBackend::Create(*model, options)).value();
  options.strict_shapes = true;
  auto fixed = std::move(GraphBackend::Create(*model, options)).value();
  graph::OpTimes dynamic_times, fixed_times, full_times;
  dynamic->set_op_times(&dynamic_times);
  fixed->set_op_times(&fixed_times);
  full->set_op_times(&full_times);

  const std::vector<int32_t> prompt = Prompt(21, vocab, 3);  // two calls: 16 rows, then 5
  ASSERT_TRUE(dynamic->Append(prompt).ok());
  ASSERT_TRUE(fixed->Append(prompt).ok());
  ASSERT_TRUE(full->Append(Prompt(32, vocab, 3)).ok());  // two full calls
  EXPECT_EQ(std::vector<float>(dynamic->last_logits().begin(), dynamic->last_logits().end()),
            std::vector<float>(fixed->last_logits().begin(), fixed->last_logits().end()));
  EXPECT_LT(dynamic_times.matmul_macs, fixed_times.matmul_macs);
  EXPECT_DOUBLE_EQ(fixed_times.matmul_macs, full_times.matmul_macs);

  // Recompute tokens [begin, 21) over their own KV: adaptive recompute keeps one row.
  std::vector<int32_t> positions(21);
  for (int i = 0; i < 21; ++i) positions[static_cast<size_t>(i)] = i;
  const auto recompute = [&](GraphBackend& backend, graph::OpTimes& times, int begin) {
    times = graph::OpTimes{};
    const auto n = static_cast<size_t>(21 - begin);
    const std::vector<uint8_t> forced(n, 0);
    auto selected = backend.RunRecompute(
        std::span<const int32_t>(prompt).subspan(static_cast<size_t>(begin), n),
        std::span<const int32_t>(positions).subspan(static_cast<size_t>(begin), n),
        std::span<const int32_t>(positions).subspan(static_cast<size_t>(begin), n), forced, 21);
    EXPECT_TRUE(selected.ok());
    return selected.ok() ? std::vector<int32_t>(selected->begin(), selected->end())
                         : std::vector<int32_t>{};
  };
  const std::vector<int32_t> dynamic_rows = recompute(*dynamic, dynamic_times, 15);
  const std::vector<int32_t> fixed_rows = recompute(*fixed, fixed_times, 15);
  EXPECT_EQ(dynamic_rows.size(), 1u);
  EXPECT_EQ(dynamic_rows, fixed_rows);
  EXPECT_EQ(std::vector<float>(dynamic->last_logits().begin(), dynamic->last_logits().end()),
            std::vector<float>(fixed->last_logits().begin(), fixed->last_logits().end()));
  EXPECT_LT(dynamic_times.matmul_macs, fixed_times.matmul_macs);
  const double six_tokens = fixed_times.matmul_macs;
  recompute(*fixed, fixed_times, 5);  // a full call of 16 tokens
  EXPECT_DOUBLE_EQ(fixed_times.matmul_macs, six_tokens);
}

// The shard pipeline's gate: a call runs shard by shard and asks, before each, for the KV of
// the layers it attends to; the results are those of whole calls. A gate that says no fails
// the call with Unavailable.
TEST_F(GraphBackendTest, AShardGateIsAskedBeforeEveryShard) {
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(Path("tiny-qwen3", DType::kQ8_0))).value();
  const int vocab = model->config().vocab_size;
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  auto plain = std::move(GraphBackend::Create(*model, options)).value();
  auto gated = std::move(GraphBackend::Create(*model, options)).value();
  const std::vector<graph::Shard>& shards = gated->prefill_graph().shards();
  ASSERT_GE(shards.size(), 2u);
  EXPECT_EQ(gated->shard_first_layers().size(), shards.size() - 1);
  std::vector<int> asked;
  gated->set_shard_gate([&asked](int end_layer) {
    asked.push_back(end_layer);
    return true;
  });
  const std::vector<int32_t> prompt = Prompt(21, vocab, 5);  // two calls
  ASSERT_TRUE(plain->Append(prompt).ok());
  ASSERT_TRUE(gated->Append(prompt).ok());
  EXPECT_EQ(std::vector<float>(plain->last_logits().begin(), plain->last_logits().end()),
            std::vector<float>(gated->last_logits().begin(), gated->last_logits().end()));
  std::vector<int> expected;
  for (int call = 0; call < 2; ++call) {
    for (const graph::Shard& shard : shards) expected.push_back(shard.end_layer);
  }
  EXPECT_EQ(asked, expected);

  const int num_layers = model->config().num_layers;
  gated->set_shard_gate([num_layers](int end_layer) { return end_layer < num_layers; });
  Status failed = gated->RunPrefill(std::vector<int32_t>{7, 8}, std::vector<int32_t>{21, 22},
                                    std::vector<int32_t>{21, 22}, 23);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  gated->set_shard_gate(nullptr);
  EXPECT_TRUE(gated
                  ->RunPrefill(std::vector<int32_t>{7, 8}, std::vector<int32_t>{21, 22},
                               std::vector<int32_t>{21, 22}, 23)
                  .ok());
}

TEST_F(GraphBackendTest, OpTimesCountNoInt8WorkInAFloatModel) {
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(Path("tiny-qwen3", DType::kF32))).value();
  GraphBackendOptions options;
  options.context_tokens = 64;
  options.prefill_capacity = 16;
  auto backend = std::move(GraphBackend::Create(*model, options)).value();
  graph::OpTimes times;
  backend->set_op_times(&times);
  ASSERT_TRUE(backend->Append(Prompt(9, model->config().vocab_size, 3)).ok());
  EXPECT_GT(times.matmul_macs, 0.0);
  EXPECT_EQ(times.matmul_int8_macs, 0.0);
  EXPECT_EQ(times.matmul_int8_ms, 0.0);
}

TEST_F(GraphBackendTest, RejectsBadInputWithoutChangingState) {
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(Path("tiny", DType::kQ8_0))).value();
  GraphBackendOptions options;
  options.context_tokens = 8;
  options.prefill_capacity = 4;
  auto backend = std::move(GraphBackend::Create(*model, options)).value();
  const int32_t ok[] = {1, 5, 6};
  ASSERT_TRUE(backend->Append(ok).ok());
  const int32_t bad_id[] = {7, 99999};
  EXPECT_EQ(backend->Append(bad_id).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend->num_tokens(), 3);
  std::vector<int32_t> too_many(6, 4);
  auto r = backend->Append(too_many);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("do not fit"), std::string::npos);
  EXPECT_EQ(backend->num_tokens(), 3);
  EXPECT_FALSE(backend->Append({}).ok());
}

TEST_F(GraphBackendTest, TrainedModelsMatchReference) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  GraphBackendOptions options;
  options.context_tokens = 256;
  options.prefill_capacity = 64;
  CompareWithReference({"stories260K", stories, 2e-3}, options, {10, 64, 150});
}

TEST_F(GraphBackendTest, TrainedModelGreedyTokensMatchReference) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  std::unique_ptr<LoadedModel> model = std::move(LoadedModel::Load(stories)).value();
  GraphBackendOptions options;
  options.context_tokens = 512;
  auto backend = std::move(GraphBackend::Create(*model, options)).value();
  auto reference = std::move(ReferenceBackend::Create(*model, 512)).value();
  int32_t token = 1;
  for (int i = 0; i < 200; ++i) {
    const int32_t in[] = {token};
    auto g = std::move(backend->Append(in)).value();
    auto r = std::move(reference->Append(in)).value();
    const int32_t a = static_cast<int32_t>(std::max_element(g.begin(), g.end()) - g.begin());
    const int32_t b = static_cast<int32_t>(std::max_element(r.begin(), r.end()) - r.begin());
    ASSERT_EQ(a, b) << "step " << i;
    token = a;
  }
}

// Out-of-order subgraph scheduling: a prefill of many calls run as a wavefront on two worker
// groups (and on three, with a window of three) leaves the same logits and KV, bit for bit,
// as in order, and the session goes on (decode) from where it left.
TEST(OutOfOrderPrefillTest, IsBitIdenticalToInOrder) {
  testing_support::TempDir dir;
  convert::MakeModelOptions make;
  make.shape = "tiny";
  make.weight_type = DType::kQ8_0;
  ASSERT_TRUE(convert::MakeModel(make, dir.path() + "/tiny.gguf").ok());
  std::unique_ptr<LoadedModel> model =
      std::move(LoadedModel::Load(dir.path() + "/tiny.gguf")).value();
  const std::vector<int32_t> prompt = Prompt(150, model->config().vocab_size, 7);
  struct Run {
    std::vector<float> prompt_logits, decode_logits;
    std::vector<uint16_t> k, v;
    int64_t calls = 0;
  };
  auto run = [&](int groups, int window) {
    GraphBackendOptions options;
    options.context_tokens = 192;
    options.prefill_capacity = 16;
    options.num_threads = 2;
    options.out_of_order_groups = groups;
    options.out_of_order_window = window;
    auto backend = std::move(GraphBackend::Create(*model, options)).value();
    Run r;
    auto logits = backend->Append(prompt);
    EXPECT_TRUE(logits.ok());
    r.prompt_logits.assign(logits->begin(), logits->end());
    r.calls = backend->num_graph_calls();
    auto next = backend->Append(std::vector<int32_t>{5});
    EXPECT_TRUE(next.ok());
    r.decode_logits.assign(next->begin(), next->end());
    const kv::KvCache& kv = backend->kv_cache();
    const size_t values =
        static_cast<size_t>(kv.shape().num_kv_heads) * kv.shape().capacity * kv.shape().head_dim;
    for (int l = 0; l < model->config().num_layers; ++l) {
      r.k.insert(r.k.end(), kv.k(l), kv.k(l) + values);
      r.v.insert(r.v.end(), kv.v(l), kv.v(l) + values);
    }
    return r;
  };
  const Run in_order = run(0, 2);
  EXPECT_EQ(in_order.calls, 10);  // ceil(150 / 16) prefill calls
  for (auto [groups, window] : {std::pair{2, 2}, std::pair{3, 3}, std::pair{2, 1}}) {
    const Run ooo = run(groups, window);
    EXPECT_EQ(ooo.prompt_logits, in_order.prompt_logits) << groups << " groups";
    EXPECT_EQ(ooo.decode_logits, in_order.decode_logits) << groups << " groups";
    EXPECT_EQ(ooo.k, in_order.k) << groups << " groups";
    EXPECT_EQ(ooo.v, in_order.v) << groups << " groups";
    EXPECT_EQ(ooo.calls, in_order.calls);
  }
}

}  // namespace
}  // namespace reprise::engine
