#include "engine/guard_calibration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "engine/compiled_model.h"
#include "engine/kv_transfer.h"
#include "engine/reuse_session_test_util.h"
#include "engine/sample_text.h"
#include "kv/memory_chunk_cache.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

class GuardCalibrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = std::move(LoadedModel::Load(kModel)).value().release();
    compiled_ = new std::shared_ptr<const CompiledModel>(
        std::move(CompiledModel::Create(*model_, {.num_threads = 2})).value());
  }
  static void TearDownTestSuite() {
    delete compiled_;
    delete model_;
  }
  static ReuseOptions Options() {
    ReuseOptions o;
    o.method = ReuseMethod::kBlend;
    o.context_tokens = 1024;
    o.compiled = *compiled_;
    return o;
  }
  static LoadedModel* model_;
  static std::shared_ptr<const CompiledModel>* compiled_;
};
LoadedModel* GuardCalibrationTest::model_ = nullptr;
std::shared_ptr<const CompiledModel>* GuardCalibrationTest::compiled_ = nullptr;

TEST_F(GuardCalibrationTest, MeasuresTheHonestResidualDistribution) {
  Result<GuardCalibration> c = CalibrateGuard(*model_, Options());
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
  EXPECT_EQ(c->key, GuardCalibrationKey(Options()));
  // Deterministic: the same model and options give the same threshold.
  Result<GuardCalibration> again = CalibrateGuard(*model_, Options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->residuals, c->residuals);
}

TEST_F(GuardCalibrationTest, RejectsBadOptionsAndBadFiles) {
  GuardCalibrationOptions bad;
  bad.num_documents = 1;
  EXPECT_EQ(CalibrateGuard(*model_, Options(), bad).error().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.margin = 0.5;
  EXPECT_EQ(CalibrateGuard(*model_, Options(), bad).error().code(), StatusCode::kInvalidArgument);
  ReuseOptions uncompiled = Options();
  uncompiled.compiled = nullptr;
  EXPECT_EQ(CalibrateGuard(*model_, uncompiled).error().code(), StatusCode::kInvalidArgument);
  for (const char* text :
       {"", "[]", "{\"threshold\": 1}",
        "{\"key\": \"k\", \"threshold\": -1, \"quantile\": 0.99, \"margin\": 2, "
        "\"p50\": 0, \"p90\": 0, \"p99\": 0, \"max\": 0, \"residuals\": []}",
        // 0 is "nothing to guard", which only a calibration without residuals says.
        "{\"key\": \"k\", \"threshold\": 0, \"quantile\": 0.99, \"margin\": 2, "
        "\"p50\": 0, \"p90\": 0, \"p99\": 0, \"max\": 0, \"residuals\": [0.1]}",
        // No key: a file of an earlier version, keyed by model and selection only.
        "{\"threshold\": 0.1, \"quantile\": 0.99, \"margin\": 2, "
        "\"p50\": 0, \"p90\": 0, \"p99\": 0, \"max\": 0, \"residuals\": [0.1]}"}) {
    EXPECT_EQ(GuardCalibration::FromJson(text).error().code(), StatusCode::kCorrupt) << text;
  }
  GuardCalibration c;
  c.key = "k";
  c.threshold = 0.01;
  c.residuals = {0.001, 0.002};
  Result<GuardCalibration> back = GuardCalibration::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key, "k");
  EXPECT_EQ(back->threshold, 0.01);
  EXPECT_EQ(back->residuals, c.residuals);
}

// Every setting that changes which tokens a recompute call leaves, or the arithmetic of their
// deviation, is in the key; the thread count is not.
TEST_F(GuardCalibrationTest, TheKeyCoversEverySettingThatChangesTheResidual) {
  const std::string base = GuardCalibrationKey(Options());
  std::vector<std::pair<std::string, ReuseOptions>> others;
  const auto vary = [&](const std::string& label, auto change) {
    ReuseOptions o = Options();
    change(o);
    others.emplace_back(label, o);
  };
  vary("selection", [](ReuseOptions& o) { o.selection = TokenSelection::kAttention; });
  vary("r", [](ReuseOptions& o) { o.recompute_ratio = 0.15; });
  vary("check layer", [](ReuseOptions& o) { o.check_layer = 2; });
  vary("recompute capacity", [](ReuseOptions& o) { o.recompute_capacity = 128; });
  vary("prefill capacity", [](ReuseOptions& o) { o.prefill_capacity = 64; });
  vary("adaptive", [](ReuseOptions& o) { o.recompute_min_deviation = 0.001; });
  vary("adaptive stable", [](ReuseOptions& o) { o.stable_min_deviation = 0.0; });
  vary("stable context", [](ReuseOptions& o) { o.stable_context_tokens = 64; });
  vary("stable repair", [](ReuseOptions& o) { o.stable_repair_tokens = 32; });
  vary("deviation of V", [](ReuseOptions& o) { o.deviation_includes_v = true; });
  vary("refresh", [](ReuseOptions& o) { o.refresh_check_layer = true; });
  vary("forced first", [](ReuseOptions& o) { o.force_first_tokens = 4; });
  vary("chunk tokens", [](ReuseOptions& o) { o.chunk_tokens = 128; });
  vary("chunking", [](ReuseOptions& o) { o.chunking = ChunkingMode::kFixed; });
  vary("scheduler", [](ReuseOptions& o) { o.scheduler = ScheduleStrategy::kGreedy; });
  CompiledModelOptions per_tensor;
  per_tensor.num_threads = 2;
  per_tensor.pack.static_int8 = StaticInt8For(Int8Scheme::kPerTensor, 0.01);
  auto other_arithmetic = std::move(CompiledModel::Create(*model_, per_tensor)).value();
  vary("int8 scheme", [&](ReuseOptions& o) { o.compiled = other_arithmetic; });
  for (const auto& [label, options] : others) {
    EXPECT_NE(GuardCalibrationKey(options), base) << label;
  }
  ReuseOptions threads = Options();
  threads.num_threads = 1;
  EXPECT_EQ(GuardCalibrationKey(threads), base);
}

TEST_F(GuardCalibrationTest, ResolveMeasuresOnceKeepsItAndLeavesGivenValues) {
  testing_support::TempDir dir;
  const std::string folder = dir.path() + "/calibrations";
  ReuseOptions given = Options();
  given.guard_deviation = 0.3;
  ASSERT_TRUE(ResolveQualityGuard(*model_, folder, &given).ok());
  EXPECT_EQ(given.guard_deviation, 0.3);
  EXPECT_FALSE(std::filesystem::exists(folder));

  // Without a folder the threshold is measured (and kept for this process): never off.
  ReuseOptions no_folder = Options();
  no_folder.recompute_ratio = 0.2;                         // settings no other test resolves
  EXPECT_EQ(no_folder.guard_deviation, kGuardCalibrated);  // the default
  ASSERT_TRUE(ResolveQualityGuard(*model_, "", &no_folder).ok());
  ReuseOptions direct = Options();
  direct.recompute_ratio = 0.2;
  EXPECT_EQ(no_folder.guard_deviation, CalibrateGuard(*model_, direct)->threshold);
  EXPECT_GT(no_folder.guard_deviation, 0.0);

  // With a folder it is kept there, under its key.
  ReuseOptions first = Options();
  first.recompute_ratio = 0.3;
  ASSERT_TRUE(ResolveQualityGuard(*model_, folder, &first).ok());
  EXPECT_GT(first.guard_deviation, 0.0);
  const std::string path = GuardCalibrationPath(folder, GuardCalibrationKey(first));
  ASSERT_TRUE(std::filesystem::exists(path));
  Result<GuardCalibration> kept = LoadGuardCalibration(path);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->threshold, first.guard_deviation);
  EXPECT_EQ(kept->key, GuardCalibrationKey(first));

  // Another token selection leaves other tokens: a threshold (and a file) of its own.
  ReuseOptions by_attention = first;
  by_attention.guard_deviation = kGuardCalibrated;
  by_attention.selection = TokenSelection::kAttentionTimesDeviation;
  ASSERT_TRUE(ResolveQualityGuard(*model_, folder, &by_attention).ok());
  const std::string own = GuardCalibrationPath(folder, GuardCalibrationKey(by_attention));
  EXPECT_NE(own, path);
  EXPECT_TRUE(std::filesystem::exists(own));
  ReuseOptions measured = by_attention;
  measured.guard_deviation = kGuardCalibrated;
  EXPECT_EQ(by_attention.guard_deviation, CalibrateGuard(*model_, measured)->threshold);
}

// A file kept for other settings (its key differs) is not taken: the guard is measured for
// these settings and the file replaced.
TEST_F(GuardCalibrationTest, AKeptFileOfOtherSettingsIsMeasuredAgain) {
  testing_support::TempDir dir;
  ReuseOptions options = Options();
  options.recompute_ratio = 0.35;
  const std::string path = GuardCalibrationPath(dir.path(), GuardCalibrationKey(options));
  GuardCalibration stale;
  stale.key = "some other settings";
  stale.threshold = 123.0;
  stale.residuals = {6.15};
  ASSERT_TRUE(SaveGuardCalibration(stale, path).ok());
  ASSERT_TRUE(ResolveQualityGuard(*model_, dir.path(), &options).ok());
  EXPECT_LT(options.guard_deviation, 1.0);
  EXPECT_EQ(LoadGuardCalibration(path)->key, GuardCalibrationKey(options));
}

// At r = 1 blend recomputes every reused token: nothing is left to guard (0, not an error).
TEST_F(GuardCalibrationTest, NothingLeftToGuardAtRatioOne) {
  ReuseOptions all = Options();
  all.recompute_ratio = 1.0;
  ASSERT_TRUE(ResolveQualityGuard(*model_, "", &all).ok());
  EXPECT_EQ(all.guard_deviation, 0.0);
}

// A context too short for the calibration text: an error that says what to do, not a guard
// silently off.
TEST_F(GuardCalibrationTest, AContextTooShortToCalibrateIsAnError) {
  ReuseOptions small = Options();
  small.context_tokens = 64;
  Status status = ResolveQualityGuard(*model_, "", &small);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("0 to run blend unguarded"), std::string::npos)
      << status.ToString();
}

// The calibrated guard, at its default threshold, lets honest reuse through and catches
// plausible damage: KV of the same text computed after another context and kept with the
// positions of the text cached alone, KV shifted by one position, KV of another passage of the
// same length — and every K negated.
TEST_F(GuardCalibrationTest, TheCalibratedGuardPassesHonestReuseAndCatchesDamagedKv) {
  ReuseOptions options = Options();
  ASSERT_TRUE(ResolveQualityGuard(*model_, "", &options).ok());
  ASSERT_GT(options.guard_deviation, 0.0);
  const std::string_view sample = SampleText();
  const PromptSegment doc{"document", std::string(sample.substr(0, 600)), false, {}};
  const PromptSegment other{"document", std::string(sample.substr(1200, 900)), false, {}};
  const std::vector<PromptSegment> prompt = {
      {"system", "Once upon a time there was a little dog named Max. ", false, {}},
      doc,
      {"question", "What did Lily do?", false, {}}};

  // The honest cache: the document cached alone.
  kv::MemoryChunkCache honest_cache(64 << 20);
  auto session = std::move(ReuseSession::Create(*model_, options, &honest_cache)).value();
  const PrefillResult stored = PrefillAndStore(*session, std::span(&doc, 1));
  // BOS, then the document's chunks (cut at sentence ends).
  std::vector<std::shared_ptr<const kv::ChunkEntry>> honest;
  for (kv::ChunkId id : stored.chunk_ids) honest.push_back(honest_cache.Peek(id));
  ASSERT_GE(honest.size(), 2u);

  // A session that prefilled `segments` without reuse, to take KV from.
  struct Prefilled {
    std::unique_ptr<ReuseSession> session;
    PrefillResult result;
  };
  const auto prefilled = [&](const std::vector<PromptSegment>& segments) {
    ReuseOptions none = options;
    none.method = ReuseMethod::kNone;
    auto s = std::move(ReuseSession::Create(*model_, none, nullptr)).value();
    Result<PrefillResult> result = s->Prefill(segments);
    EXPECT_TRUE(result.ok());
    return Prefilled{std::move(s), result.ok() ? std::move(result).value() : PrefillResult{}};
  };
  // The cached entries with each document chunk's KV made by `damage(entry)`, labelled as the
  // honest entry (its positions).
  using Damage = std::function<kv::ChunkKv(const kv::ChunkEntry&)>;
  const auto damaged = [&](const Damage& damage) {
    std::vector<std::shared_ptr<const kv::ChunkEntry>> out = {honest[0]};
    for (size_t i = 1; i < honest.size(); ++i) {
      auto bad = std::make_shared<kv::ChunkEntry>(*honest[i]);
      kv::ChunkKv kv = damage(*honest[i]);
      kv.positions = honest[i]->kv->positions;
      bad->kv = std::make_shared<kv::ChunkKv>(std::move(kv));
      out.push_back(std::move(bad));
    }
    return out;
  };
  std::vector<std::pair<std::string, std::vector<std::shared_ptr<const kv::ChunkEntry>>>> damages;
  // The same text computed after another context: its KV rotated for positions |other| later.
  auto after_other = prefilled({other, doc});
  damages.emplace_back("computed after another context", damaged([&](const kv::ChunkEntry& e) {
                         for (const reuse::PromptChunk& c : after_other.result.chunks) {
                           if (c.content == e.content) {
                             return ExtractChunkKv(after_other.session->backend().kv_cache(), c.begin,
                                                   c.end - c.begin);
                           }
                         }
                         ADD_FAILURE() << "the document's chunk is not in the other prompt";
                         return *e.kv;
                       }));
  // Shifted by one: slot t holds token t + 1's KV (the last one's twice).
  damages.emplace_back("shifted by one position", damaged([](const kv::ChunkEntry& e) {
                         kv::ChunkKv shifted = *e.kv;
                         const size_t row = static_cast<size_t>(shifted.head_dim);
                         for (int l = 0; l < shifted.num_layers; ++l) {
                           for (int h = 0; h < shifted.num_kv_heads; ++h) {
                             for (int t = 0; t + 1 < shifted.num_tokens; ++t) {
                               const size_t to = shifted.row_offset(l, h, t),
                                            from = shifted.row_offset(l, h, t + 1);
                               std::copy_n(e.kv->k.begin() + from, row, shifted.k.begin() + to);
                               std::copy_n(e.kv->v.begin() + from, row, shifted.v.begin() + to);
                             }
                           }
                         }
                         return shifted;
                       }));
  // Another passage, cached alone: its tokens at the same positions.
  auto passage = prefilled({other});
  ASSERT_GE(passage.result.prompt.size(), stored.prompt.size());
  damages.emplace_back("another passage", damaged([&](const kv::ChunkEntry& e) {
                         return ExtractChunkKv(passage.session->backend().kv_cache(),
                                               e.kv->positions.front(), e.kv->num_tokens);
                       }));
  damages.emplace_back("every K negated", damaged([](const kv::ChunkEntry& e) {
                         kv::ChunkKv negated = *e.kv;
                         for (uint16_t& x : negated.k) x ^= 0x8000;
                         return negated;
                       }));

  const auto run = [&](const std::vector<std::shared_ptr<const kv::ChunkEntry>>& cached) {
    kv::MemoryChunkCache cache(64 << 20);
    for (const auto& entry : cached) EXPECT_TRUE(cache.Insert(entry).ok());
    auto s = std::move(ReuseSession::Create(*model_, options, &cache)).value();
    Result<PrefillResult> report = s->Prefill(prompt);
    EXPECT_TRUE(report.ok());
    return std::move(report).value().report;
  };
  const PrefillReport honest_report = run(honest);
  EXPECT_GT(honest_report.tokens_nonprefix, 0) << honest_report.plan;
  EXPECT_EQ(honest_report.guard_fallbacks, 0) << "residual " << honest_report.max_residual_deviation
                                              << ", threshold " << options.guard_deviation;
  std::printf("guard threshold %.4g; largest residual: honest reuse %.4g", options.guard_deviation,
              honest_report.max_residual_deviation);
  for (const auto& [label, entries] : damages) {
    const PrefillReport report = run(entries);
    std::printf(", %s %.4g", label.c_str(), report.max_residual_deviation);
    EXPECT_GE(report.guard_fallbacks, 1)
        << label << ": residual " << report.max_residual_deviation << ", threshold "
        << options.guard_deviation << " (honest " << honest_report.max_residual_deviation << ")";
  }
  std::printf("\n");
}

}  // namespace
}  // namespace reprise::engine
