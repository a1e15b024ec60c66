#include "engine/reuse_session.h"
#include "engine/reuse_session_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "base/float16.h"
#include "convert/model_maker.h"
#include "engine/kv_transfer.h"
#include "engine/store_settings.h"
#include "kv/memory_chunk_cache.h"
#include "kv/on_flash_cache_test_util.h"
#include "reprise/engine.h"
#include "reuse/chunk_merge_scheduler.h"
#include "store/chunk_store.h"
#include "store/kv_file.h"
#include "support/temp_dir.h"

namespace reprise::engine {
namespace {

double RelativeError(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// The KV identity of `model` compiled with the default options (what a store of its KV is
// opened with).
uint64_t KvFingerprintOf(const LoadedModel& model) {
  return std::move(CompiledModel::Create(model, {})).value()->kv_fingerprint();
}

std::string Words(int seed, int count) {
  static const char* kWords[] = {"river",  "stone", "light",  "cloud",  "green",  "table",
                                 "winter", "paper", "music",  "garden", "silver", "window",
                                 "forest", "ocean", "yellow", "bridge", "candle", "mirror"};
  std::string out;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 7;
  for (int i = 0; i < count; ++i) {
    x = x * 1664525u + 1013904223u;
    out += (i ? " " : "") + std::string(kWords[(x >> 8) % 18]);
  }
  return out + ".\n";
}

class ReuseSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing_support::TempDir();
    for (const char* shape : {"tiny", "tiny-qwen3", "tiny-llama3", "tiny-qwen2"}) {
      convert::MakeModelOptions options;
      options.shape = shape;
      options.weight_type = DType::kF32;
      ASSERT_TRUE(convert::MakeModel(options, Path(shape)).ok());
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Path(const std::string& shape) { return dir_->path() + "/" + shape + ".gguf"; }

  static ReuseOptions Options(ReuseMethod method) {
    ReuseOptions o;
    o.method = method;
    o.context_tokens = 1024;
    o.prefill_capacity = 32;
    o.recompute_capacity = 64;
    o.chunk_tokens = 64;
    o.min_match_tokens = 16;
    return o;
  }

  // `tiny` has two layers and checks at layer 1, so a recompute call costs about two thirds
  // of a prefill per row (UncalibratedGraphCosts): at a tiny ratio the scheduler rightly
  // prefills the stretches around new tokens. Tests of what a recompute call does give it
  // the latencies of a deeper model, whose recompute calls are much cheaper.
  static ReuseOptions PreferRecompute(ReuseOptions o) {
    o.prefill_latency_ms = 100.0;
    o.recompute_latency_ms = 1.0;
    return o;
  }

  // Logits of `segments` with method `method`, after `warmup` requests on the same cache.
  static std::vector<float> Run(const LoadedModel& model, const ReuseOptions& options,
                                kv::ChunkCache* cache,
                                const std::vector<std::vector<PromptSegment>>& warmup,
                                const std::vector<PromptSegment>& segments,
                                PrefillReport* report = nullptr) {
    auto session = std::move(ReuseSession::Create(model, options, cache)).value();
    for (const auto& w : warmup) {
      PrefillAndStore(*session, w);
    }
    Result<PrefillResult> r = session->Prefill(segments);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (report && r.ok()) *report = r->report;
    return std::vector<float>(session->logits().begin(), session->logits().end());
  }

  static testing_support::TempDir* dir_;
};
testing_support::TempDir* ReuseSessionTest::dir_ = nullptr;

// Re-rotating cached K from position p to q equals K computed at q. A single token attends
// only to itself, so its hidden states (and pre-RoPE K) do not depend on its position, in
// every layer: the check covers both RoPE layouts and Llama 3 frequency scaling.
TEST_F(ReuseSessionTest, RerotatedKeysEqualKeysComputedAtTheNewPosition) {
  for (const char* shape : {"tiny", "tiny-qwen3", "tiny-llama3"}) {
    auto model = std::move(LoadedModel::Load(Path(shape))).value();
    GraphBackendOptions options;
    options.context_tokens = 8;
    auto backend = std::move(GraphBackend::Create(*model, options)).value();
    const model::ModelConfig& c = model->config();
    const RopeLayout rope{backend->weights().rope_inv_freq().data(), c.rope_dims,
                          c.rope_style == model::RopeStyle::kNeox
                              ? kernels::RopeStyle::kNeox
                              : kernels::RopeStyle::kInterleaved};
    for (auto [p, q] : {std::pair{3, 1200}, std::pair{900, 5}, std::pair{0, 7777}}) {
      const int32_t token[] = {42};
      const int32_t at_p[] = {p}, at_q[] = {q}, slot[] = {0};
      ASSERT_TRUE(backend->RunPrefill(token, at_p, slot, 1).ok());
      kv::ChunkKv cached = ExtractChunkKv(backend->kv_cache(), 0, 1);
      ASSERT_TRUE(backend->RunPrefill(token, at_q, slot, 1).ok());
      kv::ChunkKv truth = ExtractChunkKv(backend->kv_cache(), 0, 1);
      PlaceChunkKv(cached, 0, at_q, backend->kv_cache(), 1, rope, kernels::BestKernels());
      kv::ChunkKv moved = ExtractChunkKv(backend->kv_cache(), 1, 1);
      EXPECT_EQ(moved.positions[0], q);
      double max_error = 0, max_value = 0;
      for (size_t i = 0; i < truth.k.size(); ++i) {
        max_error =
            std::max<double>(max_error, std::abs(F16ToF32(moved.k[i]) - F16ToF32(truth.k[i])));
        max_value = std::max<double>(max_value, std::abs(F16ToF32(truth.k[i])));
      }
      // Two f16 roundings and the rotation in float.
      EXPECT_LT(max_error, 4e-3 * max_value) << shape << " " << p << " -> " << q;
      EXPECT_EQ(moved.v, truth.v);
    }
  }
}

// Prefix reuse is lossless: the same logits as a full prefill, bit for bit.
TEST_F(ReuseSessionTest, PrefixReuseIsBitExact) {
  for (const char* shape : {"tiny", "tiny-qwen2"}) {
    auto model = std::move(LoadedModel::Load(Path(shape))).value();
    kv::MemoryChunkCache cache(64 << 20);
    const std::vector<PromptSegment> first = {
        {"system", Words(1, 40)}, {"document", Words(2, 90)}, {"question", Words(3, 10)}};
    const std::vector<PromptSegment> second = {
        {"system", Words(1, 40)}, {"document", Words(2, 90)}, {"question", Words(4, 12)}};
    PrefillReport report;
    const std::vector<float> reused =
        Run(*model, Options(ReuseMethod::kPrefix), &cache, {first}, second, &report);
    const std::vector<float> full = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, second);
    EXPECT_GT(report.tokens_prefix, 100) << report.plan;
    EXPECT_EQ(reused, full) << shape;
  }
}

// With r = 1 every token of a recompute call is recomputed: the full-prefill logits.
TEST_F(ReuseSessionTest, RatioOneRecomputesToFullPrefill) {
  for (const char* shape : {"tiny", "tiny-qwen3"}) {
    auto model = std::move(LoadedModel::Load(Path(shape))).value();
    ReuseOptions options = Options(ReuseMethod::kBlend);
    options.recompute_ratio = 1.0;
    const std::vector<PromptSegment> earlier = {{"system", Words(1, 30)},
                                                {"document", Words(7, 50)}};
    const std::vector<PromptSegment> now = {{"system", Words(1, 30)},
                                            {"document", Words(9, 40)},
                                            {"document", Words(7, 50)},
                                            {"question", Words(5, 8)}};
    const std::vector<float> full = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, now);
    // Query-aware selection too: its probe writes the question's KV below the check layer
    // before the calls that compute it for real, which must leave no trace.
    for (TokenSelection key :
         {TokenSelection::kDeviation, TokenSelection::kAttentionTimesDeviation}) {
      options.selection = key;
      kv::MemoryChunkCache cache(64 << 20);
      PrefillReport report;
      const std::vector<float> blend = Run(*model, options, &cache, {earlier}, now, &report);
      EXPECT_GT(report.tokens_recomputed, 30) << report.plan << "\n" << report.schedule;
      EXPECT_EQ(report.tokens_nonprefix, 0);
      EXPECT_LT(RelativeError(blend, full), 1e-4) << shape << " " << TokenSelectionName(key);
    }
  }
}

// Query-aware selection: the probe's attention changes which tokens are recomputed (not how
// many), and the result stays between full reuse and a full prefill.
TEST_F(ReuseSessionTest, QueryAwareSelectionRecomputesOtherTokensWithinTheSameBudget) {
  auto model = std::move(LoadedModel::Load(Path("tiny-qwen3"))).value();
  const std::vector<PromptSegment> earlier = {
      {"system", Words(1, 20)}, {"document", Words(7, 45)}, {"document", Words(8, 45)}};
  const std::vector<PromptSegment> now = {{"system", Words(1, 20)},
                                          {"document", Words(8, 45)},
                                          {"document", Words(9, 20)},
                                          {"document", Words(7, 45)},
                                          {"question", Words(5, 8)}};
  const std::vector<float> none = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, now);
  kv::MemoryChunkCache full_cache(64 << 20);
  const std::vector<float> full =
      Run(*model, Options(ReuseMethod::kFull), &full_cache, {earlier}, now);
  std::vector<float> by[3];
  PrefillReport reports[3];
  int i = 0;
  for (TokenSelection key : {TokenSelection::kDeviation, TokenSelection::kAttention,
                                  TokenSelection::kAttentionTimesDeviation}) {
    ReuseOptions options = PreferRecompute(Options(ReuseMethod::kBlend));
    options.selection = key;
    options.guard_deviation = 0;
    options.stable_min_deviation = 0;  // adaptive recompute would drop some of the k
    kv::MemoryChunkCache cache(64 << 20);
    by[i] = Run(*model, options, &cache, {earlier}, now, &reports[i]);
    EXPECT_GT(reports[i].tokens_recomputed, 0) << TokenSelectionName(key);
    EXPECT_LT(RelativeError(by[i], none), RelativeError(full, none)) << TokenSelectionName(key);
    ++i;
  }
  EXPECT_EQ(reports[1].tokens_recomputed, reports[0].tokens_recomputed);
  EXPECT_EQ(reports[2].tokens_recomputed, reports[0].tokens_recomputed);
  EXPECT_GT(RelativeError(by[1], by[0]), 1e-6);
  EXPECT_GT(RelativeError(by[2], by[0]), 1e-6);
}

// With r -> 0 only forced tokens are recomputed: the result degenerates to `full`.
TEST_F(ReuseSessionTest, TinyRatioDegeneratesToFullReuse) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> earlier = {{"system", Words(1, 30)}, {"document", Words(7, 50)}};
  const std::vector<PromptSegment> now = {{"system", Words(1, 30)},
                                          {"document", Words(9, 40)},
                                          {"document", Words(7, 50)},
                                          {"question", Words(5, 8)}};
  kv::MemoryChunkCache cache_a(64 << 20), cache_b(64 << 20), cache_c(64 << 20);
  ReuseOptions blend_options = PreferRecompute(Options(ReuseMethod::kBlend));
  blend_options.recompute_ratio = 0.001;
  PrefillReport report;
  const std::vector<float> blend = Run(*model, blend_options, &cache_a, {earlier}, now, &report);
  const std::vector<float> full =
      Run(*model, Options(ReuseMethod::kFull), &cache_b, {earlier}, now);
  const std::vector<float> none = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, now);
  // Recompute calls select only their forced rows; reused tokens are recomputed only where
  // the scheduler merged them into a prefill call next to new tokens.
  EXPECT_LE(report.tokens_recomputed, 32) << report.plan << "\n" << report.schedule;
  std::printf("blend(r=0.001)-full %g, full-none %g\n", RelativeError(blend, full),
              RelativeError(full, none));
  EXPECT_LT(RelativeError(blend, full), 0.25 * RelativeError(full, none));
  // And reuse without recompute is measurably off the full prefill (so the test has teeth).
  EXPECT_GT(RelativeError(full, none), 1e-3);
  // The default ratio lands in between.
  const std::vector<float> blended =
      Run(*model, Options(ReuseMethod::kBlend), &cache_c, {earlier}, now);
  EXPECT_LT(RelativeError(blended, none), RelativeError(full, none));

  // With the check layer's fresh K/V kept for every token (an option), layers 0..check hold
  // exactly a full prefill's KV. `tiny` has two layers and checks at layer 1, so nothing
  // reused is left approximate: even r -> 0 gives the full-prefill logits.
  ASSERT_EQ(model->config().num_layers, 2);
  kv::MemoryChunkCache cache_d(64 << 20);
  blend_options.refresh_check_layer = true;
  const std::vector<float> refreshed = Run(*model, blend_options, &cache_d, {earlier}, now);
  EXPECT_LT(RelativeError(refreshed, none), 1e-4);
}

// Adaptive recompute: the r share is an upper bound; tokens whose relative deviation is below
// the threshold keep their cached KV.
TEST_F(ReuseSessionTest, AdaptiveRecomputeSkipsTokensThatBarelyDeviate) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> earlier = {
      {"system", Words(1, 30)}, {"document", Words(7, 50)}, {"document", Words(8, 60)}};
  const std::vector<PromptSegment> now = {{"system", Words(1, 30)},
                                          {"document", Words(8, 60)},
                                          {"document", Words(7, 50)},
                                          {"question", Words(5, 8)}};
  auto run = [&](double ratio, double min_deviation, PrefillReport* report) {
    kv::MemoryChunkCache cache(64 << 20);
    ReuseOptions options = Options(ReuseMethod::kBlend);
    options.recompute_ratio = ratio;
    options.recompute_min_deviation = min_deviation;
    return Run(*model, options, &cache, {earlier}, now, report);
  };
  PrefillReport fixed, all_material, none_material, between;
  const std::vector<float> fixed_logits = run(0.5, 0.0, &fixed);
  // A threshold below every deviation changes nothing.
  const std::vector<float> all_logits = run(0.5, 1e-12, &all_material);
  EXPECT_EQ(all_material.tokens_recomputed, fixed.tokens_recomputed);
  EXPECT_EQ(all_logits, fixed_logits);
  // A threshold above every deviation keeps one row per recompute call (plus forced rows).
  run(0.5, 1.0, &none_material);
  ASSERT_GT(fixed.tokens_recomputed, 60) << fixed.plan << "\n" << fixed.schedule;
  EXPECT_LT(none_material.tokens_recomputed, fixed.tokens_recomputed / 4) << none_material.schedule;
  EXPECT_EQ(none_material.tokens_recomputed + none_material.tokens_nonprefix,
            fixed.tokens_recomputed + fixed.tokens_nonprefix);
  // In between, fewer than all and at least the one-row floor.
  run(0.5, 0.05, &between);
  EXPECT_LE(between.tokens_recomputed, fixed.tokens_recomputed);
  EXPECT_GE(between.tokens_recomputed, none_material.tokens_recomputed);
  std::printf("recomputed: fixed r=0.5 %d, threshold 0.05 %d, threshold 1 %d\n",
              fixed.tokens_recomputed, between.tokens_recomputed, none_material.tokens_recomputed);
  // Out of range.
  ReuseOptions bad = Options(ReuseMethod::kBlend);
  bad.recompute_min_deviation = 2.0;
  kv::MemoryChunkCache cache(64 << 20);
  EXPECT_FALSE(ReuseSession::Create(*model, bad, &cache).ok());
}

// A chat whose window dropped its oldest turn: the turns after it keep their cached context
// but for that turn. With stable context on, those far enough from the cut keep their KV
// without any graph call but for the repair call, which checks those most likely to deviate
// and recomputes those whose deviation is material; the rest of the prompt is computed as
// before.
TEST_F(ReuseSessionTest, AMovedHistoryKeepsItsKVButForARepair) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  auto run = [&](const std::vector<std::vector<PromptSegment>>& earlier,
                 const std::vector<PromptSegment>& now, double stable_min_deviation,
                 int repair_tokens, PrefillReport* report) {
    kv::MemoryChunkCache cache(64 << 20);
    ReuseOptions options = PreferRecompute(Options(ReuseMethod::kBlend));
    options.recompute_ratio = 0.5;
    options.stable_min_deviation = stable_min_deviation;
    options.stable_context_tokens = 16;
    options.stable_repair_tokens = repair_tokens;
    return Run(*model, options, &cache, earlier, now, report);
  };
  const std::vector<PromptSegment> chat = {{"system", Words(1, 15)}, {"turn", Words(2, 20)},
                                           {"turn", Words(3, 25)},   {"turn", Words(4, 25)},
                                           {"turn", Words(5, 25)},   {"turn", Words(6, 25)}};
  const std::vector<PromptSegment> moved = {{"system", Words(1, 15)}, {"turn", Words(3, 25)},
                                            {"turn", Words(4, 25)},   {"turn", Words(5, 25)},
                                            {"turn", Words(6, 25)},   {"turn", Words(7, 6)}};
  PrefillReport off, kept, repaired, unrepaired;
  run({chat}, moved, 0.0, 256, &off);
  ASSERT_GT(off.tokens_recomputed, 40) << off.plan << "\n" << off.schedule;
  EXPECT_EQ(off.tokens_stable, 0);
  // A threshold above every deviation: the repair call checks them all and recomputes only
  // the one row a selection always keeps.
  run({chat}, moved, 1.0, 256, &kept);
  EXPECT_GT(kept.tokens_stable, 60) << kept.plan;
  EXPECT_EQ(kept.tokens_repair_checked, std::min(kept.tokens_stable, 64));  // Ls
  EXPECT_EQ(kept.tokens_repaired, 1);
  EXPECT_LT(kept.tokens_recomputed, off.tokens_recomputed / 2) << kept.schedule;
  EXPECT_EQ(kept.tokens_recomputed + kept.tokens_nonprefix,
            off.tokens_recomputed + off.tokens_nonprefix);
  // One below every deviation: the repair recomputes the checked tokens, up to the recompute
  // graph's share (r of its capacity).
  run({chat}, moved, 1e-12, 8, &repaired);
  EXPECT_EQ(repaired.tokens_stable, kept.tokens_stable);
  EXPECT_EQ(repaired.tokens_repair_checked, 8);
  EXPECT_EQ(repaired.tokens_repaired, 8);
  EXPECT_EQ(repaired.tokens_recomputed, kept.tokens_recomputed - 1 + 8);
  // No repair at all.
  run({chat}, moved, 1e-12, 0, &unrepaired);
  EXPECT_EQ(unrepaired.tokens_repair_checked, 0);
  EXPECT_EQ(unrepaired.tokens_recomputed, kept.tokens_recomputed - 1);

  // The same window as one plain-text prompt (the turns one segment, cut by content): the same
  // tokens are of stable context, found on tokens whatever the chunks.
  const auto plain = [](const std::vector<PromptSegment>& segments) {
    std::string text;
    for (const PromptSegment& segment : segments) text += segment.text;
    return std::vector<PromptSegment>{{"user", text}};
  };
  PrefillReport plain_kept;
  run({plain(chat)}, plain(moved), 1.0, 256, &plain_kept);
  EXPECT_GT(plain_kept.tokens_stable, 60) << plain_kept.plan;
  EXPECT_LT(plain_kept.tokens_recomputed, off.tokens_recomputed / 2) << plain_kept.schedule;
}

// Documents in a new order — one right after the system prompt that followed another when
// cached, each longer than the stable context — are recomputed exactly as with stable
// context off: the same selection, the same logits. (The cache is warmed alike for both.)
TEST_F(ReuseSessionTest, MovedDocumentsRecomputeExactlyAsWithStableContextOff) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  auto run = [&](const std::vector<std::vector<PromptSegment>>& earlier,
                 const std::vector<PromptSegment>& now, double stable_min_deviation,
                 PrefillReport* report) {
    kv::MemoryChunkCache cache(64 << 20);
    ReuseOptions options = PreferRecompute(Options(ReuseMethod::kBlend));
    options.recompute_ratio = 0.5;
    options.stable_context_tokens = 16;
    options.stable_min_deviation = 0.0;
    {
      auto warm = std::move(ReuseSession::Create(*model, options, &cache)).value();
      for (const std::vector<PromptSegment>& segments : earlier) {
        PrefillAndStore(*warm, segments);
      }
    }
    options.stable_min_deviation = stable_min_deviation;
    return Run(*model, options, &cache, {}, now, report);
  };
  const PromptSegment system{"system", Words(1, 20)};
  const PromptSegment d1{"document", Words(7, 30)}, d2{"document", Words(8, 35)},
      d3{"document", Words(9, 32)}, d4{"document", Words(10, 28)};
  const std::vector<std::vector<PromptSegment>> earlier = {
      {system, d1, d2, d3, {"question", Words(5, 6)}}, {system, d3, d4, {"question", Words(6, 6)}}};
  for (const std::vector<PromptSegment>& reordered : std::vector<std::vector<PromptSegment>>{
           {system, d2, d1, d4, {"question", Words(11, 6)}},
           {system, d4, d2, d3, d1, {"question", Words(12, 6)}},
           {system, {"note", Words(13, 12)}, d3, d2, {"question", Words(14, 6)}}}) {
    PrefillReport off, on, all;
    const std::vector<float> off_logits = run(earlier, reordered, 0.0, &off);
    EXPECT_EQ(run(earlier, reordered, kDefaultStableRecomputeMinDeviation, &on), off_logits);
    EXPECT_EQ(run(earlier, reordered, 1.0, &all), off_logits);
    EXPECT_GT(off.tokens_recomputed, 20) << off.plan;
    EXPECT_GT(off.tokens_nonprefix + off.tokens_recomputed, 200) << off.plan;
    EXPECT_EQ(on.tokens_recomputed, off.tokens_recomputed) << on.plan;
    EXPECT_EQ(all.tokens_recomputed, off.tokens_recomputed);
    EXPECT_EQ(on.tokens_stable, 0) << on.plan;
    EXPECT_EQ(all.tokens_stable, 0);
  }
}

// A document cached alone, as the first segment of a prompt (BOS before it), is the same
// chunk when it comes later in another prompt: found whole by its content hash.
TEST_F(ReuseSessionTest, ADocumentCachedAloneIsFoundWholeLaterInAPrompt) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  ASSERT_TRUE(model->tokenizer().vocab().add_bos);
  kv::MemoryChunkCache cache(64 << 20);
  const std::vector<PromptSegment> alone = {{"document", Words(7, 40)}};
  const std::vector<PromptSegment> later = {
      {"system", Words(1, 20)}, {"document", Words(7, 40)}, {"question", Words(5, 8)}};
  ReuseOptions options = Options(ReuseMethod::kFull);
  options.min_match_tokens = 1000;  // no sub-chunk matches: whole chunks only
  PrefillReport report;
  Run(*model, options, &cache, {alone}, later, &report);
  const int document_tokens = static_cast<int>(
      model->tokenizer().Encode(Words(7, 40), tokenizer::EncodeOptions{false, false}).size());
  EXPECT_EQ(report.tokens_nonprefix, document_tokens) << report.plan;
  EXPECT_NE(report.plan.find("whole chunks, 0 substrings"), std::string::npos) << report.plan;
  EXPECT_EQ(report.tokens_prefix, 1) << report.plan;  // BOS
}

// Content-defined chunks (issue 17): paragraphs pasted into one plain segment, then pasted
// again in another order among others, are found whole by their content hash — no
// sub-chunk matching needed. Fixed chunks cut them at offsets and find none whole.
TEST_F(ReuseSessionTest, PastedParagraphsAreFoundWholeInANewOrderWithContentDefinedChunks) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::string p1 = Words(11, 40), p2 = Words(12, 45), p3 = Words(13, 50), p4 = Words(14, 42);
  // The same opening paragraph in both (a passage at a segment's start tokenizes with the
  // SPM space prefix, after a line end without: a seam that no chunking can hide).
  const std::string head = Words(2, 12);
  const std::vector<PromptSegment> first = {{"system", Words(1, 20)},
                                            {"user", head + p1 + p2 + p3}};
  const std::vector<PromptSegment> second = {{"system", Words(1, 20)},
                                             {"user", head + p3 + p4 + p1 + Words(5, 8)}};
  const auto tokens_of = [&](const std::string& text) {
    return static_cast<int>(
        model->tokenizer().Encode(text, tokenizer::EncodeOptions{false, false}).size());
  };
  for (ChunkingMode mode : {ChunkingMode::kContent, ChunkingMode::kFixed}) {
    kv::MemoryChunkCache cache(64 << 20);
    ReuseOptions options = Options(ReuseMethod::kFull);
    options.chunk_tokens = 256;
    options.chunking = mode;
    options.min_match_tokens = 1000;  // no sub-chunk matches: whole chunks only
    PrefillReport report;
    Run(*model, options, &cache, {first}, second, &report);
    if (mode == ChunkingMode::kContent) {
      EXPECT_EQ(report.tokens_nonprefix, tokens_of(p3) + tokens_of(p1)) << report.plan;
      EXPECT_NE(report.plan.find("(2 whole chunks, 0 substrings)"), std::string::npos)
          << report.plan;
    } else {
      EXPECT_EQ(report.tokens_nonprefix, 0) << report.plan;
    }
  }
}

// Seams (issue 17): a passage whose first and last words meet new text otherwise than they
// met the old tokenizes otherwise at both ends; everything between is still found, and only
// the few tokens at each seam are new.
TEST_F(ReuseSessionTest, APassageTokenizedOtherwiseAtBothEndsIsReusedUpToTheSeams) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  std::string passage = Words(21, 80);
  passage.resize(passage.size() - 2);  // no ".\n": the next text is glued to the last word
  passage += " light";
  const std::vector<PromptSegment> first = {
      {"system", Words(1, 20)}, {"user", Words(2, 12) + passage + ".\n" + Words(3, 10)}};
  // After a space instead of a line end, the first word takes SPM's space prefix (" c", not
  // "c"); an "s" glued to the last word merges with its last letter ("t" + "s" -> "ts").
  std::string before = Words(5, 10);
  before.resize(before.size() - 2);
  const std::vector<PromptSegment> second = {{"system", Words(4, 20)},
                                             {"user", before + " " + passage + "s " + Words(6, 8)}};
  const int passage_tokens = static_cast<int>(
      model->tokenizer().Encode(passage, tokenizer::EncodeOptions{false, false}).size());
  ASSERT_GT(passage_tokens, 100);
  for (ChunkingMode mode : {ChunkingMode::kContent, ChunkingMode::kFixed}) {
    kv::MemoryChunkCache cache(64 << 20);
    ReuseOptions options = Options(ReuseMethod::kFull);
    options.chunk_tokens = 512;
    options.chunking = mode;
    PrefillReport report;
    Run(*model, options, &cache, {first}, second, &report);
    // Both seams differ (a token or two each is new); the passage's inside comes from the
    // cache.
    constexpr int kSeamTokens = 3;
    EXPECT_GE(report.tokens_nonprefix, passage_tokens - 2 * kSeamTokens) << report.plan;
    EXPECT_LE(report.tokens_nonprefix, passage_tokens - 2) << report.plan;
    std::printf("chunking %s: passage %d tokens, reused %d (%s)\n",
                mode == ChunkingMode::kContent ? "content" : "fixed", passage_tokens,
                report.tokens_nonprefix, report.plan.c_str());
  }
}

// The quality guard (docs/design.md §2): a recompute call whose reused tokens deviate too much
// from fresh ones at the check layer is prefilled in full. A cached chunk whose KV is wrong
// (here: every K and V value negated, as a damaged file that passed no checksum would be)
// trips it, and the result is the full prefill; ordinary reuse of the same chunk at a new
// position stays far below the threshold and is left alone.
TEST_F(ReuseSessionTest, QualityGuardPrefillsCallsWhoseReusedKvDeviatesTooMuch) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> alone = {{"document", Words(7, 12)}};
  const std::vector<PromptSegment> now = {
      {"system", Words(1, 20)}, {"document", Words(7, 12)}, {"question", Words(5, 8)}};
  const std::vector<int32_t> doc_tokens =
      model->tokenizer().Encode(Words(7, 12), tokenizer::EncodeOptions{false, false});
  ASSERT_LE(doc_tokens.size(), 64u);
  const std::vector<float> truth = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, now);

  ReuseOptions options = Options(ReuseMethod::kBlend);
  options.recompute_ratio = 0.05;  // few tokens repaired: the reused KV matters
  // Ordinary reuse: a residual deviation well below 1, no fallback with the guard at 0.5.
  kv::MemoryChunkCache honest(64 << 20);
  PrefillReport plain;
  const std::vector<float> unguarded = Run(*model, options, &honest, {alone}, now, &plain);
  EXPECT_GT(plain.tokens_nonprefix, 0) << plain.plan;
  EXPECT_GT(plain.max_residual_deviation, 0.0);
  EXPECT_LT(plain.max_residual_deviation, 0.5);
  EXPECT_EQ(plain.guard_fallbacks, 0);
  ReuseOptions guarded = options;
  guarded.guard_deviation = 0.5;
  kv::MemoryChunkCache honest2(64 << 20);
  PrefillReport kept;
  EXPECT_EQ(Run(*model, guarded, &honest2, {alone}, now, &kept), unguarded);
  EXPECT_EQ(kept.guard_fallbacks, 0);

  // The same chunk with its KV negated.
  // (A cache never replaces exact KV: the damaged copy goes into a cache of its own.)
  auto poison = [&](kv::MemoryChunkCache& cache) {
    kv::MemoryChunkCache scratch(64 << 20);
    auto session = std::move(ReuseSession::Create(*model, options, &scratch)).value();
    const PrefillResult stored = PrefillAndStore(*session, alone);
    const kv::ContentHash doc =
        kv::HashTokens(session->backend().compiled().kv_fingerprint(), doc_tokens);
    bool damaged_doc = false;
    for (kv::ChunkId id : stored.chunk_ids) {
      std::shared_ptr<const kv::ChunkEntry> good = scratch.Peek(id);
      ASSERT_NE(good, nullptr);
      if (good->content != doc) {
        ASSERT_TRUE(cache.Insert(good).ok());
        continue;
      }
      auto bad = std::make_shared<kv::ChunkEntry>(*good);
      auto kv = std::make_shared<kv::ChunkKv>(*good->kv);
      for (uint16_t& x : kv->k) x ^= 0x8000;
      for (uint16_t& x : kv->v) x ^= 0x8000;
      bad->kv = kv;
      ASSERT_TRUE(cache.Insert(bad).ok());
      damaged_doc = true;
    }
    ASSERT_TRUE(damaged_doc);
  };
  kv::MemoryChunkCache damaged(64 << 20), damaged2(64 << 20);
  poison(damaged);
  poison(damaged2);
  PrefillReport off, on;
  const std::vector<float> wrong = Run(*model, options, &damaged, {}, now, &off);
  EXPECT_GT(off.max_residual_deviation, 1.0);
  EXPECT_GT(RelativeError(wrong, truth), 1e-2);
  std::printf("residual deviation: honest reuse %g, negated KV %g\n", plain.max_residual_deviation,
              off.max_residual_deviation);
  const std::vector<float> caught = Run(*model, guarded, &damaged2, {}, now, &on);
  EXPECT_GE(on.guard_fallbacks, 1) << on.schedule;
  EXPECT_EQ(on.tokens_nonprefix, 0);
  EXPECT_LT(RelativeError(caught, truth), 1e-4);
}

TEST_F(ReuseSessionTest, CountsAddUpAndRejectsOverlongPrompts) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  kv::MemoryChunkCache cache(64 << 20);
  ReuseOptions options = Options(ReuseMethod::kBlend);
  auto session = std::move(ReuseSession::Create(*model, options, &cache)).value();
  const std::vector<PromptSegment> a = {{"system", Words(1, 30)}, {"document", Words(7, 50)}};
  PrefillAndStore(*session, a);
  const std::vector<PromptSegment> b = {{"system", Words(1, 30)},
                                        {"document", Words(3, 20)},
                                        {"document", Words(7, 50)},
                                        {"question", Words(2, 5)}};
  PrefillReport r = std::move(session->Prefill(b)).value().report;
  EXPECT_EQ(r.tokens_prefix + r.tokens_nonprefix + r.tokens_recomputed + r.tokens_new,
            r.prompt_tokens);
  EXPECT_GT(r.tokens_prefix, 0);
  EXPECT_GT(r.tokens_nonprefix + r.tokens_recomputed, 0);
  const std::vector<PromptSegment> huge = {{"document", Words(9, 2000)}};
  auto too_long = session->Prefill(huge);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), StatusCode::kInvalidArgument);
  // The session still works afterwards.
  EXPECT_TRUE(session->Prefill(b).ok());
}

// Storing a prompt's chunks is not a use of them (it counted a hit per chunk already cached),
// and an exact computation of a prefix-tree node replaces the blended KV cached for it.
TEST_F(ReuseSessionTest, StoringIsNotAUseAndExactKvReplacesBlendedKv) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> alone = {{"document", Words(7, 50)}};
  const std::vector<PromptSegment> now = {
      {"system", Words(1, 30)}, {"document", Words(7, 50)}, {"question", Words(5, 8)}};
  kv::MemoryChunkCache cache(64 << 20);
  auto blend =
      std::move(ReuseSession::Create(*model, Options(ReuseMethod::kBlend), &cache)).value();
  PrefillAndStore(*blend, alone);
  Result<PrefillResult> report = blend->Prefill(now);
  ASSERT_TRUE(report.ok());
  ASSERT_GT(report->report.tokens_nonprefix, 0) << report->report.plan;
  const int64_t hits = cache.stats().hits;
  ASSERT_TRUE(blend->StoreChunks(*report).ok());
  EXPECT_EQ(cache.stats().hits, hits) << "storing counted hits";
  ASSERT_TRUE(blend->StoreChunks(*report).ok());  // again: everything is cached, nothing counted
  EXPECT_EQ(cache.stats().hits, hits);

  const std::vector<kv::ChunkId> ids = report->chunk_ids;
  int blended = 0;
  for (kv::ChunkId id : ids) {
    ASSERT_TRUE(cache.Contains(id, false));
    blended += !cache.Contains(id, true);
  }
  ASSERT_GT(blended, 0) << "the document after the system prompt was stored blended";
  // Each records how it was made: the reused document blended with blend's r and check layer,
  // the system prompt and question computed.
  const ReuseOptions blend_options = Options(ReuseMethod::kBlend);
  int num_blended = 0;
  for (kv::ChunkId id : ids) {
    const kv::KvProvenance made = cache.Peek(id)->provenance;
    if (made.origin == kv::KvOrigin::kBlended) {
      ++num_blended;
      EXPECT_FLOAT_EQ(made.recompute_ratio, static_cast<float>(blend_options.recompute_ratio));
      EXPECT_EQ(made.check_layer, blend_options.check_layer);
    } else {
      EXPECT_EQ(made.origin, kv::KvOrigin::kComputed) << kv::DescribeProvenance(made);
    }
  }
  EXPECT_GT(num_blended, 0);
  EXPECT_LT(num_blended, static_cast<int>(ids.size()));
  // A full computation of the same prompt (method prefix reuses only exact KV) upgrades them.
  auto exact =
      std::move(ReuseSession::Create(*model, Options(ReuseMethod::kPrefix), &cache)).value();
  ASSERT_EQ(PrefillAndStore(*exact, now).chunk_ids, ids);
  for (kv::ChunkId id : ids) {
    EXPECT_TRUE(cache.Contains(id, true)) << id;
    EXPECT_EQ(cache.Peek(id)->provenance.origin, kv::KvOrigin::kComputed);
  }
}

// Reading and placing the reused KV beside the graph calls (the default) computes what
// placing all of it first does: the same logits, bit for bit, for every method.
TEST_F(ReuseSessionTest, OverlappingKvPreparationChangesNothing) {
  auto model = std::move(LoadedModel::Load(Path("tiny-qwen3"))).value();
  const std::vector<std::vector<PromptSegment>> warmup = {{{"document", Words(7, 60)}},
                                                          {{"document", Words(8, 50)}}};
  const std::vector<PromptSegment> prompt = {{"system", Words(1, 20)},
                                             {"document", Words(8, 50)},
                                             {"document", Words(7, 60)},
                                             {"question", Words(5, 8)}};
  for (const ReuseMethod method : {ReuseMethod::kPrefix, ReuseMethod::kFull, ReuseMethod::kBlend}) {
    ReuseOptions overlapped = Options(method);
    ReuseOptions first = overlapped;
    first.overlap_kv_preparation = false;
    kv::MemoryChunkCache cache_a(64 << 20), cache_b(64 << 20);
    PrefillReport report;
    const std::vector<float> a = Run(*model, overlapped, &cache_a, warmup, prompt, &report);
    const std::vector<float> b = Run(*model, first, &cache_b, warmup, prompt);
    if (method != ReuseMethod::kPrefix) {
      EXPECT_GT(report.tokens_nonprefix + report.tokens_recomputed, 0) << report.plan;
    }
    EXPECT_EQ(a, b) << static_cast<int>(method);
  }
}

// Chunks "on flash" whose every read is slow.
kv::testing_caches::OnFlashChunkCache SlowFlashCache() {
  return kv::testing_caches::OnFlashChunkCache(
      [](kv::ChunkId) { std::this_thread::sleep_for(std::chrono::milliseconds(15)); });
}

// The shard pipeline runs a call's shard as soon as the KV of its layers is placed, while
// slow reads bring in the rest: every shard still sees exactly its KV — the logits are those
// of placing everything before the first call, bit for bit. The same for query-aware
// selection, whose probe waits for the layers up to the check layer only.
TEST_F(ReuseSessionTest, TheShardPipelineWithSlowReadsChangesNothing) {
  auto model = std::move(LoadedModel::Load(Path("tiny-qwen3"))).value();
  const std::vector<std::vector<PromptSegment>> warmup = {
      {{"document", Words(7, 60)}}, {{"document", Words(8, 50)}}, {{"document", Words(9, 40)}}};
  const std::vector<PromptSegment> prompt = {{"system", Words(1, 20)},   {"document", Words(8, 50)},
                                             {"question", Words(5, 8)},  {"document", Words(7, 60)},
                                             {"document", Words(9, 40)}, {"question", Words(6, 8)}};
  for (const auto& [method, selection] :
       {std::pair{ReuseMethod::kFull, TokenSelection::kDeviation},
        std::pair{ReuseMethod::kBlend, TokenSelection::kDeviation},
        std::pair{ReuseMethod::kBlend, TokenSelection::kAttentionTimesDeviation}}) {
    SCOPED_TRACE(std::string(ReuseMethodName(method)) + " " + TokenSelectionName(selection));
    ReuseOptions pipelined = Options(method);
    pipelined.selection = selection;
    ReuseOptions whole_calls = pipelined;
    whole_calls.shard_pipeline = false;
    ReuseOptions first = pipelined;
    first.overlap_kv_preparation = false;
    kv::testing_caches::OnFlashChunkCache cache_a = SlowFlashCache(), cache_b = SlowFlashCache(),
                                          cache_c = SlowFlashCache();
    PrefillReport report;
    const std::vector<float> a = Run(*model, pipelined, &cache_a, warmup, prompt, &report);
    const std::vector<float> b = Run(*model, whole_calls, &cache_b, warmup, prompt);
    const std::vector<float> c = Run(*model, first, &cache_c, warmup, prompt);
    EXPECT_GE(report.chunks_from_flash, 3) << report.plan;
    EXPECT_GT(report.tokens_nonprefix + report.tokens_recomputed, 100) << report.plan;
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, c);
    EXPECT_EQ(b, c);
  }
}

// Static shapes change the work of each call, never a result: for every method and every
// scheduler the logits are those of the dynamic path. The schedulers differ in their calls.
TEST_F(ReuseSessionTest, StaticShapesChangeNoResultUnderEveryScheduler) {
  auto model = std::move(LoadedModel::Load(Path("tiny-qwen3"))).value();
  const std::vector<std::vector<PromptSegment>> warmup = {{{"document", Words(7, 60)}},
                                                          {{"document", Words(8, 50)}}};
  const std::vector<PromptSegment> prompt = {{"system", Words(1, 20)},
                                             {"document", Words(8, 50)},
                                             {"question", Words(5, 8)},
                                             {"document", Words(7, 60)},
                                             {"question", Words(6, 8)}};
  std::vector<std::string> schedules;
  for (const ReuseMethod method : {ReuseMethod::kNone, ReuseMethod::kPrefix, ReuseMethod::kBlend}) {
    for (const ScheduleStrategy scheduler :
         {ScheduleStrategy::kDp, ScheduleStrategy::kGreedy,
          ScheduleStrategy::kNaive}) {
      if (method != ReuseMethod::kBlend && scheduler != ScheduleStrategy::kDp) continue;
      SCOPED_TRACE(std::string(ReuseMethodName(method)) + " " +
                   ScheduleStrategyName(scheduler));
      ReuseOptions dynamic = Options(method);
      dynamic.scheduler = scheduler;
      dynamic.prefill_capacity = 32;
      dynamic.recompute_capacity = 64;
      ReuseOptions fixed = dynamic;
      fixed.static_shapes = true;
      kv::MemoryChunkCache cache_a(64 << 20), cache_b(64 << 20);
      PrefillReport report;
      const std::vector<float> a = Run(*model, dynamic, &cache_a, warmup, prompt, &report);
      const std::vector<float> b = Run(*model, fixed, &cache_b, warmup, prompt);
      ASSERT_FALSE(a.empty());
      EXPECT_EQ(a, b);
      if (method == ReuseMethod::kBlend) {
        EXPECT_GT(report.tokens_recomputed, 0) << report.plan;
        schedules.push_back(report.schedule);
      }
    }
  }
  ASSERT_EQ(schedules.size(), 3u);
  EXPECT_NE(schedules[0], schedules[2]) << schedules[0];  // the DP merges what naive does not
}

// Planning reads the store's index only; the KV comes from flash through the loader. A chunk
// file damaged after it was catalogued fails its checks when it is loaded: the prompt is
// planned again without it and that part computed — the logits of a full prefill, never the
// damaged KV.
TEST_F(ReuseSessionTest, AChunkFileDamagedOnFlashIsPlannedAroundNotUsed) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> prompt = {
      {"system", Words(1, 60)}, {"document", Words(7, 60)}, {"question", Words(5, 8)}};
  const std::vector<float> reference =
      Run(*model, Options(ReuseMethod::kNone), nullptr, {}, prompt);
  testing_support::TempDir dir;
  store::StoreOptions store_options;
  store_options.dir = dir.path() + "/store";
  store_options.model_fingerprint = KvFingerprintOf(*model);
  store_options.prefetch = false;
  std::vector<kv::ChunkId> ids;
  {
    auto store = std::move(store::ChunkStore::Open(store_options)).value();
    auto cache = store->OpenNamespace("app");
    auto session =
        std::move(ReuseSession::Create(*model, Options(ReuseMethod::kPrefix), cache.get())).value();
    ids = PrefillAndStore(*session, prompt).chunk_ids;
    ASSERT_TRUE(store->Flush().ok());
  }
  ASSERT_GE(ids.size(), 3u);
  {
    // One byte of the second chunk's KV flipped on flash.
    const std::string path = store_options.dir + "/" + store::KvFileName("app", ids[1]);
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good()) << path;
    file.seekg(0, std::ios::end);
    const std::streamoff size = file.tellg();
    file.seekg(size / 2);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x40);
    file.seekp(size / 2);
    file.write(&byte, 1);
  }
  auto store = std::move(store::ChunkStore::Open(store_options)).value();
  auto cache = store->OpenNamespace("app");
  auto session =
      std::move(ReuseSession::Create(*model, Options(ReuseMethod::kPrefix), cache.get())).value();
  Result<PrefillResult> report = session->Prefill(prompt);
  ASSERT_TRUE(report.ok()) << report.error().ToString();
  EXPECT_EQ(report->report.replans, 1) << report->report.plan;
  // Only the chunk before the damaged one is still a prefix (read from flash by the first
  // plan, from memory by the second).
  EXPECT_EQ(report->report.chunks_from_flash + report->report.chunks_from_memory, 1);
  EXPECT_GT(report->report.tokens_prefix, 0);
  EXPECT_LT(report->report.tokens_prefix, report->report.prompt_tokens / 2) << report->report.plan;
  const std::vector<float> logits(session->logits().begin(), session->logits().end());
  EXPECT_LT(RelativeError(logits, reference), 1e-6);
  EXPECT_EQ(store->Stats().corrupt_dropped, 1);
}

// A chat's next turn after a blended turn: the previous prompt is this one's start, so blend
// continues it as prefix — no re-rotation, nothing recomputed again — with the KV that turn
// used (the logits equal a blend of the same prompt that recomputes the same tokens); the
// tokens from the first blended chunk on count as inexact and are stored inexact again.
// `prefix` takes exact KV only and stops where the blended part starts.
TEST_F(ReuseSessionTest, TheNextTurnContinuesABlendedPathAsPrefix) {
  auto model = std::move(LoadedModel::Load(Path("tiny"))).value();
  const std::vector<PromptSegment> alone = {{"document", Words(7, 50)}};
  std::vector<PromptSegment> turn = {
      {"system", Words(1, 30)}, {"document", Words(7, 50)}, {"question", Words(5, 8)}};
  kv::MemoryChunkCache cache(64 << 20);
  auto blend =
      std::move(ReuseSession::Create(*model, Options(ReuseMethod::kBlend), &cache)).value();
  PrefillAndStore(*blend, alone);
  Result<PrefillResult> first = blend->Prefill(turn);
  ASSERT_TRUE(first.ok());
  ASSERT_GT(first->report.tokens_nonprefix + first->report.tokens_recomputed, 40) << first->report.plan;
  ASSERT_TRUE(blend->StoreChunks(*first).ok());
  const int turn_tokens = static_cast<int>(first->prompt.size());

  std::vector<PromptSegment> next = turn;
  next.push_back({"question", Words(6, 9)});
  Result<PrefillResult> second = blend->Prefill(next);
  ASSERT_TRUE(second.ok());
  // The whole previous prompt but its last token (always run, for the logits) is prefix.
  EXPECT_GE(second->report.tokens_prefix, turn_tokens - 1) << second->report.plan;
  EXPECT_EQ(second->report.tokens_nonprefix, 0) << second->report.plan;
  EXPECT_EQ(second->report.tokens_recomputed, 0) << second->report.plan;
  int system_tokens = 0;  // BOS and the system segment: exact in the first turn
  {
    auto count =
        std::move(ReuseSession::Create(*model, Options(ReuseMethod::kNone), nullptr)).value();
    const std::vector<PromptSegment> system = {turn[0]};
    Result<PrefillResult> counted = count->Prefill(system);
    ASSERT_TRUE(counted.ok());
    system_tokens = static_cast<int>(counted->prompt.size());
  }
  EXPECT_GT(second->report.tokens_prefix_inexact, 40) << second->report.plan;
  EXPECT_LE(second->report.tokens_prefix_inexact, second->report.tokens_prefix - system_tokens);
  EXPECT_NE(second->report.plan.find("inexact"), std::string::npos) << second->report.plan;
  ASSERT_TRUE(blend->StoreChunks(*second).ok());
  int inexact = 0;
  for (kv::ChunkId id : second->chunk_ids) inexact += !cache.Contains(id, true);
  EXPECT_GT(inexact, 0);

  // The continued KV is the first turn's: the next turn's logits are those of a fresh session
  // given that KV through the same path (the same cache) — and they differ from a full
  // prefill (the path is approximate), so the check has teeth.
  const std::vector<float> continued(blend->logits().begin(), blend->logits().end());
  const std::vector<float> again = Run(*model, Options(ReuseMethod::kBlend), &cache, {}, next);
  EXPECT_EQ(continued, again);
  const std::vector<float> full = Run(*model, Options(ReuseMethod::kNone), nullptr, {}, next);
  EXPECT_GT(RelativeError(continued, full), 0.0);

  // Method prefix: only the exact system prompt.
  PrefillReport exact_report;
  Run(*model, Options(ReuseMethod::kPrefix), &cache, {}, next, &exact_report);
  EXPECT_EQ(exact_report.tokens_prefix_inexact, 0);
  EXPECT_EQ(exact_report.tokens_prefix, system_tokens) << exact_report.plan;
}

model::ModelConfig ShapeOf(int layers, int dim, int heads, int kv_heads, int head_dim, int ffn) {
  model::ModelConfig c;
  c.num_layers = layers;
  c.embedding_dim = dim;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.ffn_dim = ffn;
  return c;
}

TEST(UncalibratedGraphCostsTest, CountTheRowsEachLayerRuns) {
  // One layer: Q+K+V 64*(64+2*32) = 8192, O+MLP 64*64 + 3*64*172 = 37120 multiply-adds a row.
  const model::ModelConfig c = ShapeOf(5, 64, 8, 4, 8, 172);
  const double layer = 8192 + 37120;
  const double per_call = 4 * 5 * layer;
  const GraphCosts costs = UncalibratedGraphCosts(c, 1, 128, 256, 0.25);
  EXPECT_DOUBLE_EQ(costs.prefill, per_call + 128 * 5 * layer);
  // 256 rows through layer 0 and the check layer's Q/K/V; 64 selected through the rest.
  EXPECT_DOUBLE_EQ(costs.recompute, per_call + 256 * (layer + 8192) + 64 * (37120 + 3 * layer));
  // A tiny ratio still pays for the rows every layer up to the check layer runs.
  EXPECT_GT(UncalibratedGraphCosts(c, 1, 128, 256, 0.004).recompute, 256 * layer);
  // The check layer is clamped to the model; r = 1 costs a prefill of Ls rows.
  EXPECT_DOUBLE_EQ(UncalibratedGraphCosts(ShapeOf(2, 64, 8, 4, 8, 172), 7, 32, 32, 1.0).recompute,
                   UncalibratedGraphCosts(ShapeOf(2, 64, 8, 4, 8, 172), 7, 32, 32, 1.0).prefill);
  // The ratio the comment in reuse_session.h quotes for the smollm2-135m shape.
  const GraphCosts smollm2 =
      UncalibratedGraphCosts(ShapeOf(30, 576, 9, 3, 64, 1536), 1, 256, 256, 0.25);
  EXPECT_NEAR(smollm2.recompute / smollm2.prefill, 0.290, 0.001);
}

// Review finding: with costs proportional to r alone, --ratio 0.004 made recompute calls look
// almost free and one query became dozens of graph calls (each absorbing a few new tokens).
// With these costs the schedule needs about as many calls as the prompt needs capacity.
TEST(UncalibratedGraphCostsTest, ATinyRatioDoesNotSplitAPromptIntoManyCalls) {
  const int lp = 128, ls = 256;
  const double r = 0.004;
  const GraphCosts costs = UncalibratedGraphCosts(ShapeOf(30, 576, 9, 3, 64, 1536), 1, lp, ls, r);
  reuse::ChunkMergeOptions options;
  options.prefill_capacity = lp;
  options.recompute_capacity = ls;
  options.prefill_latency_ms = costs.prefill;
  options.recompute_latency_ms = costs.recompute;
  options.recompute_ratio = r;
  Result<reuse::ChunkMergeScheduler> scheduler = reuse::ChunkMergeScheduler::Create(options);
  ASSERT_TRUE(scheduler.ok());
  std::vector<reuse::TokenRun> runs;
  int at = 0;
  for (int i = 0; i < 8; ++i) {  // a document of 60 reused tokens, then 4 new ones, 8 times
    runs.push_back({reuse::RunKind::kNonPrefix, at, at + 60});
    runs.push_back({reuse::RunKind::kNew, at + 60, at + 64});
    at += 64;
  }
  Result<reuse::ChunkSchedule> schedule = scheduler->Schedule(runs);
  ASSERT_TRUE(schedule.ok());
  EXPECT_LE(schedule->calls.size(), static_cast<size_t>((at + lp - 1) / lp + 1))
      << schedule->ToString();

  // The old costs (prefill Lp, recompute r * Ls) made this prompt many calls.
  options.prefill_latency_ms = lp;
  options.recompute_latency_ms = r * ls;
  Result<reuse::ChunkMergeScheduler> old = reuse::ChunkMergeScheduler::Create(options);
  ASSERT_TRUE(old.ok());
  Result<reuse::ChunkSchedule> old_schedule = old->Schedule(runs);
  ASSERT_TRUE(old_schedule.ok());
  EXPECT_GT(old_schedule->calls.size(), 2 * schedule->calls.size());
}

}  // namespace
}  // namespace reprise::engine

namespace reprise::engine {
namespace {

// The public expert settings (reprise::ReuseTuning) start where the engine's own defaults are,
// so an engine made with default options reuses as ReuseOptions{} says.
TEST(ReuseTuningTest, PublicDefaultsAreTheEnginesDefaults) {
  const reprise::ReuseTuning tuning;
  const ReuseOptions reuse;
  EXPECT_EQ(tuning.chunk_tokens, reuse.chunk_tokens);
  EXPECT_EQ(static_cast<int>(tuning.chunking), static_cast<int>(reuse.chunking));
  EXPECT_EQ(tuning.check_layer, reuse.check_layer);
  EXPECT_EQ(tuning.deviation_includes_v, reuse.deviation_includes_v);
  EXPECT_EQ(tuning.refresh_check_layer, reuse.refresh_check_layer);
  EXPECT_EQ(tuning.force_first_tokens, reuse.force_first_tokens);
  EXPECT_EQ(tuning.query_probe_tokens, reuse.query_probe_tokens);
  EXPECT_EQ(tuning.stable_context_tokens, reuse.stable_context_tokens);
  EXPECT_EQ(tuning.stable_repair_tokens, reuse.stable_repair_tokens);
  EXPECT_EQ(tuning.min_match_tokens, reuse.min_match_tokens);
  EXPECT_EQ(tuning.max_candidates, reuse.max_candidates);
  EXPECT_EQ(tuning.overlap_kv_preparation, reuse.overlap_kv_preparation);
  EXPECT_EQ(tuning.shard_pipeline, reuse.shard_pipeline);
  EXPECT_EQ(static_cast<int>(tuning.scheduler), static_cast<int>(reuse.scheduler));
  const StoreSettings store;
  EXPECT_EQ(tuning.store_cost_aware_eviction, store.cost_aware);
  EXPECT_EQ(tuning.store_prefetch, store.prefetch);
}

}  // namespace
}  // namespace reprise::engine
