#include "engine/decode_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "convert/model_maker.h"
#include "engine/graph_backend.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

std::vector<int32_t> Prompt(int n, int vocab, int seed) {
  std::vector<int32_t> tokens;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 7;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<int32_t>(3 + x % static_cast<uint32_t>(vocab - 3)));
  }
  return tokens;
}

double MaxRelativeDifference(std::span<const float> a, std::span<const float> b) {
  double worst = 0.0, scale = 1e-6;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return worst / scale;
}

int32_t Argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

class DecodeBatcherTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    convert::MakeModelOptions options;
    options.shape = "tiny-qwen3";
    options.weight_type = GetParam();
    ASSERT_TRUE(convert::MakeModel(options, dir_.path() + "/m.gguf").ok());
    model_ = std::move(LoadedModel::Load(dir_.path() + "/m.gguf")).value();
    compiled_ =
        std::move(CompiledModel::Create(*model_, CompiledModelOptions{.num_threads = 2})).value();
  }

  std::unique_ptr<GraphBackend> NewSession(DecodeBatcher* batcher) {
    GraphBackendOptions options;
    options.context_tokens = 256;
    options.prefill_capacity = 32;
    options.decode_batcher = batcher;
    return std::move(GraphBackend::Create(compiled_, options)).value();
  }

  testing_support::TempDir dir_;
  std::unique_ptr<LoadedModel> model_;
  std::shared_ptr<const CompiledModel> compiled_;
};

// Sessions with different prompts (so different lengths and caches), each decoding 8 greedy
// tokens on its own thread through one batcher, get the tokens and the logits of sessions
// decoding alone; the batcher ran them together.
TEST_P(DecodeBatcherTest, ConcurrentSessionsDecodeAsIfAlone) {
  constexpr int kSessions = 3;
  constexpr int kSteps = 8;
  const int vocab = model_->config().vocab_size;
  std::vector<std::vector<int32_t>> alone_tokens(kSessions);
  std::vector<std::vector<std::vector<float>>> alone_logits(kSessions);
  for (int s = 0; s < kSessions; ++s) {
    std::unique_ptr<GraphBackend> session = NewSession(nullptr);
    std::span<const float> logits = *session->Append(Prompt(20 + 17 * s, vocab, s));
    for (int step = 0; step < kSteps; ++step) {
      const int32_t next[] = {Argmax(logits)};
      alone_tokens[s].push_back(next[0]);
      logits = *session->Append(next);
      alone_logits[s].emplace_back(logits.begin(), logits.end());
    }
  }

  Result<std::unique_ptr<DecodeBatcher>> batcher =
      DecodeBatcher::Create(compiled_, kSessions, std::chrono::milliseconds(50));
  ASSERT_TRUE(batcher.ok()) << batcher.error().ToString();
  std::vector<std::unique_ptr<GraphBackend>> sessions;
  std::vector<std::span<const float>> first(kSessions);
  for (int s = 0; s < kSessions; ++s) {
    sessions.push_back(NewSession(batcher->get()));
    first[s] = *sessions[s]->Append(Prompt(20 + 17 * s, vocab, s));  // prefill: not batched
  }
  EXPECT_EQ((*batcher)->stats().steps, 0);
  std::vector<std::vector<int32_t>> tokens(kSessions);
  std::vector<double> worst(kSessions, 0.0);
  std::vector<Status> errors(kSessions);
  {
    // Everyone joins before anyone steps, so that each step waits for all three.
    std::vector<std::unique_ptr<DecodeBatcher::Participant>> joined;
    for (int s = 0; s < kSessions; ++s) {
      joined.push_back(std::make_unique<DecodeBatcher::Participant>(batcher->get()));
    }
    std::vector<std::thread> threads;
    for (int s = 0; s < kSessions; ++s) {
      threads.emplace_back([&, s] {
        std::span<const float> logits = first[s];
        for (int step = 0; step < kSteps; ++step) {
          const int32_t next[] = {Argmax(logits)};
          tokens[s].push_back(next[0]);
          Result<std::span<const float>> r = sessions[s]->Append(next);
          if (!r.ok()) {
            errors[s] = r.error();
            return;
          }
          logits = *r;
          worst[s] = std::max(worst[s], MaxRelativeDifference(logits, alone_logits[s][step]));
        }
        joined[s].reset();  // this session leaves; the others need not wait for it
      });
    }
    for (std::thread& t : threads) t.join();
  }
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_TRUE(errors[s].ok()) << errors[s].ToString();
    EXPECT_EQ(tokens[s], alone_tokens[s]) << "session " << s;
    EXPECT_LT(worst[s], 1e-3) << "session " << s;
    EXPECT_EQ(sessions[s]->num_tokens(), 20 + 17 * s + kSteps);
  }
  const DecodeBatcherStats stats = (*batcher)->stats();
  EXPECT_EQ(stats.rows, kSessions * kSteps);
  EXPECT_EQ(stats.max_rows, kSessions);
  EXPECT_LT(stats.steps, kSessions * kSteps);  // steps ran together, not one by one
}

INSTANTIATE_TEST_SUITE_P(Types, DecodeBatcherTest,
                         ::testing::Values(DType::kF32, DType::kQ8_0, DType::kQ4_0),
                         [](const auto& param_info) {
                           return std::string(DTypeName(param_info.param));
                         });

TEST_P(DecodeBatcherTest, AParticipantThatDoesNotStepDelaysTheOthersOnlyByTheWait) {
  Result<std::unique_ptr<DecodeBatcher>> batcher =
      DecodeBatcher::Create(compiled_, 4, std::chrono::milliseconds(1));
  ASSERT_TRUE(batcher.ok());
  std::unique_ptr<GraphBackend> session = NewSession(batcher->get());
  const DecodeBatcher::Participant busy(batcher->get());  // e.g. writing to a slow client
  const DecodeBatcher::Participant decoding(batcher->get());
  std::span<const float> logits = *session->Append(Prompt(12, model_->config().vocab_size, 1));
  for (int step = 0; step < 3; ++step) {
    const int32_t next[] = {Argmax(logits)};
    Result<std::span<const float>> r = session->Append(next);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    logits = *r;
  }
  EXPECT_EQ((*batcher)->stats().steps, 3);
  EXPECT_EQ((*batcher)->stats().max_rows, 1);
}

TEST_P(DecodeBatcherTest, RefusesBadSizesAndBadRows) {
  EXPECT_FALSE(DecodeBatcher::Create(nullptr, 2).ok());
  EXPECT_FALSE(DecodeBatcher::Create(compiled_, 0).ok());
  EXPECT_FALSE(DecodeBatcher::Create(compiled_, DecodeBatcher::kMaxBatch + 1).ok());
  Result<std::unique_ptr<DecodeBatcher>> batcher = DecodeBatcher::Create(compiled_, 2);
  ASSERT_TRUE(batcher.ok());
  std::unique_ptr<GraphBackend> session = NewSession(batcher->get());
  ASSERT_TRUE(session->Append(Prompt(5, model_->config().vocab_size, 2)).ok());
  const int32_t bad[] = {model_->config().vocab_size};
  EXPECT_EQ(session->Append(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(session->num_tokens(), 5);
  std::vector<float> logits(static_cast<size_t>(model_->config().vocab_size));
  const graph::KvBinding unbound;
  // A row without a cache, or whose slot it may not see, is refused; nothing ran.
  EXPECT_FALSE((*batcher)->Step(graph::BatchRow{1, 0, 0, &unbound, 1}, logits).ok());
  EXPECT_FALSE((*batcher)->Step(graph::BatchRow{1, 0, 0, nullptr, 1}, logits).ok());
  EXPECT_FALSE((*batcher)->Step(graph::BatchRow{1, 0, 0, nullptr, 1}, std::span<float>()).ok());
}

}  // namespace
}  // namespace reprise::engine
