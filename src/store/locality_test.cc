#include "store/locality.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/random.h"

namespace reprise::store {
namespace {

ChunkInfo Chunk(uint64_t id, uint64_t document = 0, uint64_t parent = 0, uint64_t content = 0) {
  ChunkInfo chunk;
  chunk.id = id;
  chunk.content = content;
  chunk.document = document;
  chunk.parent = parent;
  chunk.num_tokens = 100;
  chunk.bytes = 1000;
  return chunk;
}

LocalityModel MakeModel(const LocalityOptions& options = {}) {
  Result<LocalityModel> model = LocalityModel::Create(options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return std::move(model).value();
}

void Record(LocalityModel& model, std::vector<ChunkInfo> chunks, double now_s) {
  model.RecordRequest(chunks, now_s);
}

TEST(LocalityModelTest, RejectsBadOptions) {
  auto bad = [](auto edit) {
    LocalityOptions options;
    edit(options);
    return !LocalityModel::Create(options).ok();
  };
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.weight_spatial = -1; }));
  EXPECT_TRUE(bad(
      [](LocalityOptions& o) { o.weight_spatial = o.weight_temporal = o.weight_semantic = 0; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.recency_half_life_s = 0; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.frequency_half_life_s = -5; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.recency_share = 1.5; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.co_access_prior = 0; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.max_co_access_per_chunk = 0; }));
  EXPECT_TRUE(bad([](LocalityOptions& o) { o.weight_temporal = std::nan(""); }));
  EXPECT_TRUE(LocalityModel::Create(LocalityOptions{}).ok());
}

TEST(LocalityModelTest, UnknownChunkScoresZero) {
  LocalityModel model = MakeModel();
  const LocalityTerms t = model.Terms(Chunk(7, 3, 2), 100);
  EXPECT_EQ(t.spatial, 0);
  EXPECT_EQ(t.temporal, 0);
  EXPECT_EQ(t.semantic, 0);
  EXPECT_EQ(model.Score(Chunk(7), 100), 0);
  EXPECT_EQ(model.HitFrequency(Chunk(7), 100), 0);
}

TEST(LocalityModelTest, TemporalFollowsTheFormula) {
  LocalityOptions options;
  LocalityModel model = MakeModel(options);
  Record(model, {Chunk(1)}, 0);
  // One half-life later: recency 0.5, count 2^(-600/3600).
  const double count = std::exp2(-600.0 / 3600.0);
  const double expected = 0.75 * 0.5 + 0.25 * count / (count + 1);
  EXPECT_NEAR(model.Terms(Chunk(1), 600).temporal, expected, 1e-12);
  EXPECT_NEAR(model.HitFrequency(Chunk(1), 600), count / (count + 1), 1e-12);
}

TEST(LocalityModelTest, RecentBeatsOld) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1)}, 0);
  Record(model, {Chunk(2)}, 300);
  EXPECT_GT(model.Terms(Chunk(2), 400).temporal, model.Terms(Chunk(1), 400).temporal);
  EXPECT_GT(model.Score(Chunk(2), 400), model.Score(Chunk(1), 400));
  // Recency decays with time.
  EXPECT_GT(model.Terms(Chunk(2), 400).temporal, model.Terms(Chunk(2), 4000).temporal);
}

TEST(LocalityModelTest, FrequentBeatsRare) {
  LocalityModel model = MakeModel();
  for (int i = 0; i < 4; ++i) Record(model, {Chunk(1)}, 10.0 * i);
  Record(model, {Chunk(2)}, 30);  // last used together with chunk 1's last use
  EXPECT_GT(model.Terms(Chunk(1), 100).temporal, model.Terms(Chunk(2), 100).temporal);
  EXPECT_GT(model.HitFrequency(Chunk(1), 100), model.HitFrequency(Chunk(2), 100));
}

TEST(LocalityModelTest, CoAccessedBeatsNot) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1), Chunk(2)}, 0);  // 1 and 2 travel together
  Record(model, {Chunk(3)}, 0);            // 3 alone
  Record(model, {Chunk(1)}, 500);          // 1 is used again
  const double with_partner = model.Terms(Chunk(2), 500).semantic;
  EXPECT_GT(with_partner, 0);
  EXPECT_EQ(model.Terms(Chunk(3), 500).semantic, 0);
  EXPECT_GT(model.Score(Chunk(2), 500), model.Score(Chunk(3), 500));

  // More co-accesses strengthen the link.
  LocalityModel often = MakeModel();
  for (int i = 0; i < 5; ++i) Record(often, {Chunk(1), Chunk(2)}, 0);
  Record(often, {Chunk(1)}, 500);
  EXPECT_GT(often.Terms(Chunk(2), 500).semantic, with_partner);
}

TEST(LocalityModelTest, AHubLendsLittleSemanticLocality) {
  LocalityModel model = MakeModel();
  // 1 is in every request (a system prompt); 2 travels with 3 every time.
  for (uint64_t r = 0; r < 20; ++r) {
    Record(model, {Chunk(1), Chunk(100 + r)}, 10.0 * r);
    Record(model, {Chunk(1), Chunk(2), Chunk(3)}, 10.0 * r + 5);
  }
  Record(model, {Chunk(1)}, 300);
  EXPECT_LT(model.Terms(Chunk(100), 300).semantic, 0.05);  // used once beside the hub
  Record(model, {Chunk(3)}, 300);
  EXPECT_GT(model.Terms(Chunk(2), 300).semantic, 0.85);  // ~19.3 / (20.3 + 1)
}

TEST(LocalityModelTest, SameDocumentBeatsOther) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1, /*document=*/10), Chunk(2, /*document=*/20)}, 0);
  Record(model, {Chunk(3, /*document=*/10)}, 600);
  // Two untracked chunks: one of the document just used, one of a document used long ago.
  const double same = model.Terms(Chunk(100, 10), 600).spatial;
  const double older = model.Terms(Chunk(101, 20), 600).spatial;
  const double none = model.Terms(Chunk(102, 30), 600).spatial;
  EXPECT_NEAR(same, 1.0, 1e-12);
  EXPECT_NEAR(older, 0.5, 1e-12);
  EXPECT_EQ(none, 0);
  EXPECT_GT(model.Score(Chunk(100, 10), 600), model.Score(Chunk(101, 20), 600));
}

TEST(LocalityModelTest, PrefixSubtreeCountsPerChild) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1)}, 0);
  // A continuation of a node just used, with no other children known: fully spatial.
  EXPECT_NEAR(model.Terms(Chunk(50, 0, /*parent=*/1), 0).spatial, 1.0, 1e-12);
  // A node shared by many prompts (a system prompt) spreads over its children.
  Record(model, {Chunk(1), Chunk(2, 0, 1)}, 10);
  Record(model, {Chunk(1), Chunk(3, 0, 1)}, 20);
  Record(model, {Chunk(1), Chunk(4, 0, 1)}, 30);
  EXPECT_NEAR(model.Terms(Chunk(50, 0, 1), 30).spatial, 1.0 / 3, 1e-12);
  model.Forget(4);
  EXPECT_NEAR(model.Terms(Chunk(50, 0, 1), 30).spatial, 1.0 / 2, 1e-12);
}

TEST(LocalityModelTest, TermsAndScoreStayNormalised) {
  LocalityOptions options;
  options.weight_spatial = 2;
  options.weight_temporal = 3;
  options.weight_semantic = 5;  // weights need not sum to 1
  LocalityModel model = MakeModel(options);
  Random random(42);
  double now_s = 0;
  for (int r = 0; r < 2000; ++r) {
    std::vector<ChunkInfo> used;
    used.push_back(Chunk(1, 1));  // a chunk in every request: every term saturates
    for (int i = 0; i < 6; ++i) {
      const uint64_t id = 2 + random.NextBelow(40);
      used.push_back(Chunk(id, 1 + id % 5, id % 3 == 0 ? 1 : 0));
    }
    now_s += 1;
    model.RecordRequest(used, now_s);
  }
  for (uint64_t id = 1; id < 45; ++id) {
    const ChunkInfo chunk = Chunk(id, 1 + id % 5, id % 3 == 0 ? 1 : 0);
    const LocalityTerms t = model.Terms(chunk, now_s);
    for (double term : {t.spatial, t.temporal, t.semantic}) {
      EXPECT_GE(term, 0);
      EXPECT_LE(term, 1);
    }
    const double expected = (2 * t.spatial + 3 * t.temporal + 5 * t.semantic) / 10;
    EXPECT_NEAR(model.Score(chunk, now_s), expected, 1e-12);
    EXPECT_NEAR(model.PrefetchScore(chunk, now_s), (2 * t.spatial + 5 * t.semantic) / 7, 1e-12);
  }
  // The always-used chunk is near the top of the range.
  EXPECT_GT(model.Score(Chunk(1, 1), now_s), 0.9);
  EXPECT_LE(model.Score(Chunk(1, 1), now_s), 1.0);
}

TEST(LocalityModelTest, ForgetDropsChunkAndLinks) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1), Chunk(2)}, 0);
  EXPECT_GT(model.Terms(Chunk(1), 0).semantic, 0);
  model.Forget(2);
  EXPECT_EQ(model.Terms(Chunk(1), 0).semantic, 0);
  EXPECT_EQ(model.Terms(Chunk(2), 0).temporal, 0);
  EXPECT_EQ(model.num_tracked_contents(), 1u);
  EXPECT_EQ(model.num_co_access_links(), 0u);
  model.Forget(2);  // unknown: a no-op
  model.Forget(1);
  EXPECT_EQ(model.num_tracked_contents(), 0u);
}

TEST(LocalityModelTest, LinksKeepTheStrongest) {
  LocalityOptions options;
  options.max_co_access_per_chunk = 4;
  LocalityModel model = MakeModel(options);
  for (int i = 0; i < 5; ++i) Record(model, {Chunk(1), Chunk(2)}, 0);  // strong link 1-2
  // Many weak partners of 1, each once: they fill and churn the other slots.
  for (uint64_t other = 10; other < 40; ++other) Record(model, {Chunk(1), Chunk(other)}, 0);
  EXPECT_LE(model.num_co_access_links(), 4u + 30u + 1u);  // 1 holds 4; the others 1 each
  // 1's link to 2 survived: using 2 makes 1 semantically likely.
  Record(model, {Chunk(2)}, 1);
  // Confidence: 5 joint uses of the 6 uses of 2, smoothed by the prior 1.
  EXPECT_NEAR(model.Terms(Chunk(1), 1).semantic, 5.0 / 7.0, 1e-3);
}

TEST(LocalityModelTest, HistoryFollowsTheContent) {
  LocalityModel model = MakeModel();
  // Text 77 stored as node 1 and used three times, then evicted; later stored again as node 2
  // under another prefix.
  for (int r = 0; r < 3; ++r) Record(model, {Chunk(1, 0, 0, /*content=*/77)}, 10.0 * r);
  model.Forget(1);
  EXPECT_EQ(model.num_tracked_nodes(), 0u);
  const ChunkInfo again = Chunk(2, 0, /*parent=*/9, /*content=*/77);
  const ChunkInfo fresh = Chunk(3, 0, 9, /*content=*/78);
  EXPECT_GT(model.Terms(again, 30).temporal, 0.5);
  EXPECT_EQ(model.Terms(fresh, 30).temporal, 0);
  EXPECT_NEAR(model.HitFrequency(again, 20), 3.0 / 4.0, 0.01);
  model.ForgetContent(77);
  EXPECT_EQ(model.Terms(again, 30).temporal, 0);
  EXPECT_EQ(model.num_tracked_contents(), 0u);
}

TEST(LocalityModelTest, SweepCapsTrackedContents) {
  LocalityOptions options;
  options.max_tracked_contents = 100;
  LocalityModel model = MakeModel(options);
  for (uint64_t r = 1; r <= 512; ++r) {
    Record(model, {Chunk(r, 0, 0, 1000 + r), Chunk(10000 + r, 0, 0, 5000 + r)}, r);
  }
  // Swept at requests 256 and 512: the 100 most recent contents remain.
  EXPECT_EQ(model.num_tracked_contents(), 100u);
  EXPECT_GT(model.Terms(Chunk(512, 0, 0, 1512), 512).temporal, 0);
  EXPECT_EQ(model.Terms(Chunk(1, 0, 0, 1001), 512).temporal, 0);
}

TEST(LocalityModelTest, MemoryStaysBounded) {
  LocalityOptions options;
  options.max_co_access_per_chunk = 16;
  options.recency_half_life_s = 10;
  LocalityModel model = MakeModel(options);
  Random random(7);
  constexpr uint64_t kNumChunks = 300;
  double now_s = 0;
  for (int r = 0; r < 5000; ++r) {
    std::vector<ChunkInfo> used;
    for (int i = 0; i < 10; ++i) {
      const uint64_t id = 1 + random.NextBelow(kNumChunks);
      used.push_back(Chunk(id, /*document=*/1000 + static_cast<uint64_t>(r)));  // new each time
    }
    now_s += 1;
    model.RecordRequest(used, now_s);
  }
  EXPECT_LE(model.num_tracked_contents(), kNumChunks);
  EXPECT_LE(model.num_co_access_links(), kNumChunks * 16);
  // Documents idle for 40 half-lives (400 requests here) are swept every 256 requests.
  EXPECT_LE(model.num_tracked_documents(), 400u + 256u + 1u);
  for (uint64_t id = 1; id <= kNumChunks; ++id) model.Forget(id);
  EXPECT_EQ(model.num_tracked_contents(), 0u);
}

TEST(LocalityModelTest, DuplicatesInARequestCountOnce) {
  LocalityModel once = MakeModel();
  LocalityModel twice = MakeModel();
  Record(once, {Chunk(1), Chunk(2)}, 0);
  Record(twice, {Chunk(1), Chunk(2), Chunk(1)}, 0);
  EXPECT_EQ(once.HitFrequency(Chunk(1), 0), twice.HitFrequency(Chunk(1), 0));
  EXPECT_EQ(once.Terms(Chunk(2), 0).semantic, twice.Terms(Chunk(2), 0).semantic);
}

TEST(LocalityModelTest, TimeGoingBackwardsIsClamped) {
  LocalityModel model = MakeModel();
  Record(model, {Chunk(1)}, 100);
  Record(model, {Chunk(2)}, 50);  // treated as 100
  EXPECT_EQ(model.Terms(Chunk(1), 100).temporal, model.Terms(Chunk(2), 100).temporal);
}

}  // namespace
}  // namespace reprise::store
