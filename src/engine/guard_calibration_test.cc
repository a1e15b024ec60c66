#include "engine/guard_calibration.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/sample_text.h"
#include "kv/memory_chunk_cache.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

ReuseOptions Options() {
  ReuseOptions o;
  o.method = ReuseMethod::kBlend;
  o.context_tokens = 1024;
  o.num_threads = 2;
  return o;
}

std::unique_ptr<LoadedModel> Model() { return std::move(LoadedModel::Load(kModel)).value(); }

TEST(GuardCalibrationTest, MeasuresTheHonestResidualDistribution) {
  auto model = Model();
  Result<GuardCalibration> c = CalibrateGuard(*model, Options());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  ASSERT_GE(c->residuals.size(), 6u);  // at least one recompute call per order
  EXPECT_TRUE(std::is_sorted(c->residuals.begin(), c->residuals.end()));
  EXPECT_GT(c->p50, 0.0);
  EXPECT_LE(c->p50, c->p90);
  EXPECT_LE(c->p90, c->p99);
  EXPECT_LE(c->p99, c->max);
  EXPECT_DOUBLE_EQ(c->threshold, 20.0 * c->p99);
  EXPECT_GT(c->residuals.front(), 0.0);
  EXPECT_LT(c->threshold, 0.5);  // honest reuse deviates little
  // Deterministic: the same model and options give the same threshold.
  Result<GuardCalibration> again = CalibrateGuard(*model, Options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->residuals, c->residuals);
}

TEST(GuardCalibrationTest, RejectsBadOptionsAndBadFiles) {
  auto model = Model();
  GuardCalibrationOptions bad;
  bad.num_documents = 1;
  EXPECT_EQ(CalibrateGuard(*model, Options(), bad).error().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.margin = 0.5;
  EXPECT_EQ(CalibrateGuard(*model, Options(), bad).error().code(), StatusCode::kInvalidArgument);
  for (const char* text : {"", "[]", "{\"threshold\": 1}",
                           "{\"threshold\": -1, \"quantile\": 0.99, \"margin\": 2, "
                           "\"p50\": 0, \"p90\": 0, \"p99\": 0, \"max\": 0, \"residuals\": []}"}) {
    EXPECT_EQ(GuardCalibration::FromJson(text).error().code(), StatusCode::kCorrupt) << text;
  }
  GuardCalibration c;
  c.threshold = 0.01;
  c.residuals = {0.001, 0.002};
  Result<GuardCalibration> back = GuardCalibration::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->threshold, 0.01);
  EXPECT_EQ(back->residuals, c.residuals);
}

TEST(GuardCalibrationTest, ResolveMeasuresOnceKeepsItAndLeavesGivenValues) {
  auto model = Model();
  testing_support::TempDir dir;
  const std::string folder = dir.path() + "/calibrations";
  ReuseOptions given = Options();
  given.guard_deviation = 0.3;
  EXPECT_FALSE(ResolveQualityGuard(*model, folder, true, &given).has_value());
  EXPECT_EQ(given.guard_deviation, 0.3);
  ReuseOptions no_folder = Options();
  EXPECT_EQ(no_folder.guard_deviation, kGuardCalibrated);  // the default
  EXPECT_FALSE(ResolveQualityGuard(*model, "", true, &no_folder).has_value());
  EXPECT_EQ(no_folder.guard_deviation, 0.0);  // off
  ReuseOptions not_measured = Options();
  EXPECT_FALSE(ResolveQualityGuard(*model, folder, false, &not_measured).has_value());
  EXPECT_EQ(not_measured.guard_deviation, 0.0);

  ReuseOptions first = Options();
  std::optional<GuardCalibration> measured = ResolveQualityGuard(*model, folder, true, &first);
  ASSERT_TRUE(measured.has_value());
  EXPECT_GT(first.guard_deviation, 0.0);
  EXPECT_EQ(first.guard_deviation, measured->threshold);
  EXPECT_TRUE(
      std::filesystem::exists(GuardCalibrationPath(folder, model->fingerprint(), first.selection)));
  ReuseOptions second = Options();
  ASSERT_TRUE(ResolveQualityGuard(*model, folder, false, &second).has_value());  // kept
  EXPECT_EQ(second.guard_deviation, first.guard_deviation);

  // Another token selection leaves other tokens, so it is not given this one's threshold: it
  // has a calibration (and a file) of its own, measured with that selection.
  ReuseOptions by_attention = Options();
  by_attention.selection = graph::SelectionKey::kAttentionTimesDeviation;
  ASSERT_NE(by_attention.selection, first.selection);
  ReuseOptions unmeasured = by_attention;
  EXPECT_FALSE(ResolveQualityGuard(*model, folder, false, &unmeasured).has_value());
  std::optional<GuardCalibration> own = ResolveQualityGuard(*model, folder, true, &by_attention);
  ASSERT_TRUE(own.has_value());
  EXPECT_TRUE(std::filesystem::exists(
      GuardCalibrationPath(folder, model->fingerprint(), by_attention.selection)));
  ReuseOptions direct = Options();
  direct.selection = by_attention.selection;
  Result<GuardCalibration> measured_directly = CalibrateGuard(*model, direct);
  ASSERT_TRUE(measured_directly.ok());
  EXPECT_EQ(own->threshold, measured_directly->threshold);
}

// The calibrated guard lets honest reuse through and catches KV that is badly wrong.
TEST(GuardCalibrationTest, TheCalibratedGuardPassesHonestReuseAndCatchesDamagedKv) {
  auto model = Model();
  ReuseOptions options = Options();
  options.guard_deviation = CalibrateGuard(*model, Options())->threshold;
  const std::vector<PromptSegment> doc = {
      {"document", std::string(SampleText().substr(0, 600)), false, {}}};
  const std::vector<PromptSegment> prompt = {
      {"system", "Once upon a time there was a little dog named Max. ", false, {}},
      doc[0],
      {"question", "What did Lily do?", false, {}}};
  const auto run = [&](bool damage) {
    kv::MemoryChunkCache cache(64 << 20);
    auto session = std::move(ReuseSession::Create(*model, options, &cache)).value();
    EXPECT_TRUE(session->Prefill(doc).ok());
    EXPECT_TRUE(session->StoreChunks().ok());
    if (damage) {
      for (kv::ChunkId id : session->chunk_ids()) {
        std::shared_ptr<const kv::ChunkEntry> good = cache.Peek(id);
        if (!good || good->tokens.size() < 4) continue;  // BOS stays
        auto bad = std::make_shared<kv::ChunkEntry>(*good);
        auto kv = std::make_shared<kv::ChunkKv>(*good->kv);
        for (uint16_t& x : kv->k) x ^= 0x8000;
        bad->kv = kv;
        EXPECT_TRUE(cache.Insert(bad).ok());
      }
    }
    Result<PrefillReport> report = session->Prefill(prompt);
    EXPECT_TRUE(report.ok());
    return std::move(report).value();
  };
  const PrefillReport honest = run(false);
  EXPECT_GT(honest.tokens_nonprefix + honest.tokens_recomputed, 0) << honest.plan;
  EXPECT_EQ(honest.guard_fallbacks, 0);
  const PrefillReport damaged = run(true);
  EXPECT_GE(damaged.guard_fallbacks, 1) << damaged.schedule;
}

}  // namespace
}  // namespace reprise::engine
