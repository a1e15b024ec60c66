// What "exact" KV promises (kv_arithmetic.h): every input that changes the bits of the KV
// changes CompiledModel::kv_fingerprint, and what leaves it out leaves the bits alone.
#include "engine/kv_arithmetic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convert/model_maker.h"
#include "engine/compiled_model.h"
#include "engine/decode_batcher.h"
#include "engine/graph_backend.h"
#include "engine/kv_transfer.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

std::vector<int32_t> Prompt(int n, int vocab, int seed) {
  std::vector<int32_t> tokens;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 5;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<int32_t>(3 + x % static_cast<uint32_t>(vocab - 3)));
  }
  return tokens;
}

// The K and V bits of cache slots [0, n).
std::vector<uint16_t> KvBits(GraphBackend& backend, int n) {
  const kv::ChunkKv kv = ExtractChunkKv(backend.kv_cache(), 0, n);
  std::vector<uint16_t> bits(kv.k.begin(), kv.k.end());
  bits.insert(bits.end(), kv.v.begin(), kv.v.end());
  return bits;
}

class KvArithmeticTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    convert::MakeModelOptions options;
    options.shape = "tiny-qwen3";
    options.weight_type = GetParam();
    path_ = dir_.path() + "/m.gguf";
    ASSERT_TRUE(convert::MakeModel(options, path_).ok());
    model_ = std::move(LoadedModel::Load(path_)).value();
  }
  std::shared_ptr<const CompiledModel> Compile(CompiledModelOptions options = {}) {
    if (options.num_threads == 0) options.num_threads = 2;
    Result<std::shared_ptr<const CompiledModel>> compiled = CompiledModel::Create(*model_, options);
    EXPECT_TRUE(compiled.ok()) << compiled.error().ToString();
    return compiled.ok() ? *compiled : nullptr;
  }
  std::unique_ptr<GraphBackend> Session(std::shared_ptr<const CompiledModel> compiled,
                                        int prefill_capacity, bool strict_shapes = false,
                                        DecodeBatcher* batcher = nullptr) {
    GraphBackendOptions options;
    options.context_tokens = 256;
    options.prefill_capacity = prefill_capacity;
    options.strict_shapes = strict_shapes;
    options.decode_batcher = batcher;
    return std::move(GraphBackend::Create(std::move(compiled), options)).value();
  }
  // The KV of `tokens` prefilled in one Append.
  std::vector<uint16_t> PrefilledKv(std::shared_ptr<const CompiledModel> compiled,
                                    const std::vector<int32_t>& tokens, int prefill_capacity,
                                    bool strict_shapes = false) {
    std::unique_ptr<GraphBackend> session =
        Session(std::move(compiled), prefill_capacity, strict_shapes);
    EXPECT_TRUE(session->Append(tokens).ok());
    return KvBits(*session, static_cast<int>(tokens.size()));
  }
  int vocab() const { return model_->config().vocab_size; }

  testing_support::TempDir dir_;
  std::string path_;
  std::unique_ptr<LoadedModel> model_;
};

// Left out of the identity: the prefill graph's capacity (a prompt cut into other calls),
// static shapes and the thread count give the same KV, bit for bit.
TEST_P(KvArithmeticTest, CapacityStaticShapesAndThreadsLeaveTheBitsAlone) {
  const std::vector<int32_t> tokens = Prompt(75, vocab(), 1);
  const std::shared_ptr<const CompiledModel> compiled = Compile();
  const std::vector<uint16_t> reference = PrefilledKv(compiled, tokens, 128);
  EXPECT_EQ(PrefilledKv(compiled, tokens, 16), reference) << "capacity 16";
  EXPECT_EQ(PrefilledKv(compiled, tokens, 32), reference) << "capacity 32";
  EXPECT_EQ(PrefilledKv(compiled, tokens, 32, /*strict_shapes=*/true), reference) << "static";
  const std::shared_ptr<const CompiledModel> one_thread = Compile({.num_threads = 1});
  EXPECT_EQ(one_thread->kv_fingerprint(), compiled->kv_fingerprint());
  EXPECT_EQ(PrefilledKv(one_thread, tokens, 128), reference) << "1 thread";
}

// The decode graph writes the KV a prefill of the same tokens writes: a chat reply's KV,
// made by decode steps, is exact.
TEST_P(KvArithmeticTest, DecodeStepsWriteThePrefillsKv) {
  const std::vector<int32_t> tokens = Prompt(40, vocab(), 2);
  const std::shared_ptr<const CompiledModel> compiled = Compile();
  const std::vector<uint16_t> reference = PrefilledKv(compiled, tokens, 32);
  std::unique_ptr<GraphBackend> session = Session(compiled, 32);
  ASSERT_TRUE(session->Append(std::span(tokens).first(30)).ok());
  for (size_t i = 30; i < tokens.size(); ++i) {
    ASSERT_TRUE(session->Append(std::span(tokens).subspan(i, 1)).ok());
  }
  EXPECT_EQ(KvBits(*session, static_cast<int>(tokens.size())), reference);
}

// Decode steps batched with other sessions' (DecodeBatcher) write the prefill's KV too.
TEST_P(KvArithmeticTest, BatchedDecodeStepsWriteThePrefillsKv) {
  const std::vector<int32_t> a = Prompt(40, vocab(), 3);
  const std::vector<int32_t> b = Prompt(33, vocab(), 4);
  const std::shared_ptr<const CompiledModel> compiled = Compile();
  const std::vector<uint16_t> reference_a = PrefilledKv(compiled, a, 32);
  const std::vector<uint16_t> reference_b = PrefilledKv(compiled, b, 32);
  Result<std::unique_ptr<DecodeBatcher>> batcher =
      DecodeBatcher::Create(compiled, 2, std::chrono::milliseconds(200));
  ASSERT_TRUE(batcher.ok()) << batcher.error().ToString();
  std::unique_ptr<GraphBackend> sa = Session(compiled, 32, false, batcher->get());
  std::unique_ptr<GraphBackend> sb = Session(compiled, 32, false, batcher->get());
  ASSERT_TRUE(sa->Append(std::span(a).first(30)).ok());
  ASSERT_TRUE(sb->Append(std::span(b).first(23)).ok());
  {
    DecodeBatcher::Participant pa(batcher->get());
    DecodeBatcher::Participant pb(batcher->get());
    std::thread other([&] {
      for (size_t i = 23; i < b.size(); ++i)
        EXPECT_TRUE(sb->Append(std::span(b).subspan(i, 1)).ok());
    });
    for (size_t i = 30; i < a.size(); ++i) EXPECT_TRUE(sa->Append(std::span(a).subspan(i, 1)).ok());
    other.join();
  }
  EXPECT_GT((*batcher)->stats().max_rows, 1);  // they did run together
  EXPECT_EQ(KvBits(*sa, static_cast<int>(a.size())), reference_a);
  EXPECT_EQ(KvBits(*sb, static_cast<int>(b.size())), reference_b);
}

// In the identity: other kernels, another int8 scheme, another outlier share, forced weight
// formats each give another fingerprint; the same settings give the same one.
TEST_P(KvArithmeticTest, EveryInputOfTheArithmeticChangesTheFingerprint) {
  const std::shared_ptr<const CompiledModel> base = Compile();
  EXPECT_EQ(Compile()->kv_fingerprint(), base->kv_fingerprint());
  std::vector<std::pair<std::string, CompiledModelOptions>> others;
  CompiledModelOptions o;
  o.scalar_kernels = true;
  if (std::string(kernels::BestKernels().name) != "scalar") others.emplace_back("scalar", o);
  o = {};
  o.pack.static_int8 = StaticInt8For(Int8Scheme::kPerTensor, 0.01);
  others.emplace_back("per-tensor", o);
  o.pack.static_int8 = StaticInt8For(Int8Scheme::kShadow, 0.01);
  others.emplace_back("shadow 0.01", o);
  o.pack.static_int8 = StaticInt8For(Int8Scheme::kShadow, 0.25);
  others.emplace_back("shadow 0.25", o);
  o = {};
  o.pack.force_format =
      GetParam() == DType::kF32 ? kernels::PackedFormat::kQ8_0x8 : kernels::PackedFormat::kF32x8;
  others.emplace_back("forced format", o);
  std::vector<uint64_t> seen = {base->kv_fingerprint()};
  for (const auto& [label, options] : others) {
    const std::shared_ptr<const CompiledModel> other = Compile(options);
    ASSERT_NE(other, nullptr) << label;
    for (uint64_t f : seen) EXPECT_NE(other->kv_fingerprint(), f) << label;
    seen.push_back(other->kv_fingerprint());
    EXPECT_NE(other->kv_arithmetic(), base->kv_arithmetic()) << label;
  }
}

// Why the kernel set is in the identity: another set's KV is not the same bits.
TEST_P(KvArithmeticTest, AnotherKernelSetWritesOtherBits) {
  if (std::string(kernels::BestKernels().name) == "scalar") GTEST_SKIP() << "only scalar here";
  const std::vector<int32_t> tokens = Prompt(60, vocab(), 5);
  CompiledModelOptions scalar;
  scalar.scalar_kernels = true;
  EXPECT_NE(PrefilledKv(Compile(scalar), tokens, 32), PrefilledKv(Compile(), tokens, 32));
}

// A different activation calibration gives other per-tensor scales: another fingerprint.
TEST_P(KvArithmeticTest, AnotherActivationCalibrationChangesTheFingerprint) {
  CompiledModelOptions options;
  options.pack.static_int8 = StaticInt8For(Int8Scheme::kPerTensor, 0.01);
  const std::shared_ptr<const CompiledModel> measured = Compile(options);
  ASSERT_NE(measured, nullptr);
  // The same shape, every range doubled.
  auto calibration = std::make_shared<model::ActivationCalibration>();
  const model::ModelConfig& c = model_->config();
  for (int l = 0; l < c.num_layers; ++l) {
    for (const int64_t dim :
         std::vector<int64_t>{c.embedding_dim, c.q_dim(), c.embedding_dim, c.ffn_dim}) {
      calibration->channel_absmax.emplace_back(static_cast<size_t>(dim), 2.0f + l);
    }
  }
  options.pack.activation_calibration = calibration;
  const std::shared_ptr<const CompiledModel> other = Compile(options);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->kv_fingerprint(), measured->kv_fingerprint());
}

INSTANTIATE_TEST_SUITE_P(Types, KvArithmeticTest,
                         ::testing::Values(DType::kQ8_0, DType::kQ4_K, DType::kF32),
                         [](const ::testing::TestParamInfo<DType>& type) {
                           return std::string(DTypeName(type.param));
                         });

}  // namespace
}  // namespace reprise::engine
