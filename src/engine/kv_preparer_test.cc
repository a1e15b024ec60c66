#include "engine/kv_preparer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <numeric>

#include "base/float16.h"
#include "kv/memory_chunk_cache.h"
#include "kv/on_flash_cache_test_util.h"
#include "reuse/planner_test_util.h"

namespace reprise::engine {
namespace {

using reuse::testing_plans::CachePath;
using reuse::testing_plans::MakePrompt;
using reuse::testing_tokens::Range;
using reuse::testing_tokens::Tokens;

constexpr kv::KvShape kShape{1, 1, 2, 0};  // planner_test_util's entries
const float kInvFreq[1] = {0.5f};
constexpr RopeLayout kRope{kInvFreq, 2, kernels::RopeStyle::kInterleaved};

// Fills every cached entry's K and V with values that differ per token, at positions 0...
void Fill(kv::ChunkCache& cache, const Tokens& tokens, kv::ChunkId parent) {
  auto entry = reuse::testing_plans::Entry(parent, tokens, true);
  auto kv = std::make_shared<kv::ChunkKv>(*entry->kv);
  for (size_t i = 0; i < kv->k.size(); ++i) {
    kv->k[i] = F32ToF16(0.01f * static_cast<float>(tokens[i / 2] % 97) + 0.5f);
    kv->v[i] = F32ToF16(-0.02f * static_cast<float>(i));
  }
  std::iota(kv->positions.begin(), kv->positions.end(), 0);
  entry->kv = kv;
  ASSERT_TRUE(cache.Insert(entry).ok());
}

struct Fixture {
  kv::MemoryChunkCache cache{1 << 24};
  std::unique_ptr<kv::KvCache> session =
      std::move(kv::KvCache::Create(kv::KvShape{1, 1, 2, 256})).value();
  std::unique_ptr<kv::KvCache> expected =
      std::move(kv::KvCache::Create(kv::KvShape{1, 1, 2, 256})).value();
  std::vector<int32_t> positions = std::vector<int32_t>(256);
  Fixture() { std::iota(positions.begin(), positions.end(), 0); }
};

const Tokens kA = Range(100, 40);
const Tokens kB = Range(300, 40);

TEST(KvPreparerTest, SlotsBecomeVisibleOnlyWhenTheCallerNeedsThemAndHoldThePlacedKv) {
  Fixture f;
  Fill(f.cache, kA, kv::kRootChunkId);
  Fill(f.cache, kB, kv::kRootChunkId);  // cached alone: reused at a new position below
  const auto prompt = MakePrompt({kA, Range(900, 20), kB, Range(950, 5)});
  Result<reuse::ReusePlan> plan =
      reuse::PlanReuse(prompt.tokens, prompt.chunks, f.cache, reuse::PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->num_prefix, 40);
  ASSERT_EQ(plan->num_nonprefix, 40);
  f.session->ClearFrom(0);
  {
    reuse::KvLoader loader(&f.cache, *plan, kShape);
    KvPreparer preparer(*plan, loader, *f.session, f.positions, kRope, kernels::BestKernels());
    ASSERT_TRUE(preparer.ReadyUntil(50));  // a call over the 20 new tokens' first half
    const std::span<const int32_t> slots = f.session->slot_positions();
    for (int i = 0; i < 40; ++i) EXPECT_EQ(slots[i], i);
    for (int i = 40; i < 100; ++i) EXPECT_EQ(slots[i], -1) << i;  // not needed yet
    ASSERT_TRUE(preparer.ReadyUntil(static_cast<int>(prompt.tokens.size())));
    for (int i = 60; i < 100; ++i) EXPECT_EQ(slots[i], i);
    EXPECT_EQ(slots[100], -1);  // new tokens are the graphs' to write
  }
  // The same KV as placing each run at once.
  kernels::KernelSet kernels = kernels::BestKernels();
  f.expected->ClearFrom(0);
  for (const auto& [begin, source] : {std::pair{0, 0}, std::pair{60, 1}}) {
    PlaceChunkKv(*plan->sources[static_cast<size_t>(source)]->kv, 0,
                 std::span<const int32_t>(f.positions.data() + begin, 40), *f.expected, begin,
                 kRope, kernels);
  }
  for (int slot = 0; slot < 100; ++slot) {
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(f.session->k_row(0, 0, slot)[d], f.expected->k_row(0, 0, slot)[d]) << slot;
      EXPECT_EQ(f.session->v_row(0, 0, slot)[d], f.expected->v_row(0, 0, slot)[d]) << slot;
    }
  }
  // The moved chunk's K really was rotated (by 60 positions).
  EXPECT_NE(f.session->k_row(0, 0, 60)[0], plan->sources[1]->kv->k[0]);
}

// A cache whose Find loses every chunk (evicted between planning and loading).
class ForgetfulCache : public kv::testing_caches::OnFlashChunkCache {
 public:
  std::shared_ptr<const kv::ChunkEntry> Find(kv::ChunkId) override { return nullptr; }
};

TEST(KvPreparerTest, ASourceThatFailsStopsItAndTheCallerIsTold) {
  Fixture f;
  ForgetfulCache cache;
  Fill(cache, kA, kv::kRootChunkId);
  const auto prompt = MakePrompt({kA, Range(900, 20)});
  Result<reuse::ReusePlan> plan =
      reuse::PlanReuse(prompt.tokens, prompt.chunks, cache, reuse::PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->num_prefix, 40);
  f.session->ClearFrom(0);
  reuse::KvLoader loader(&cache, *plan, kShape);
  KvPreparer preparer(*plan, loader, *f.session, f.positions, kRope, kernels::BestKernels());
  EXPECT_TRUE(preparer.ReadyUntil(0));  // nothing needed before token 0
  EXPECT_FALSE(preparer.ReadyUntil(41));
  EXPECT_EQ(f.session->slot_positions()[0], -1);
  EXPECT_EQ(loader.WaitAll().size(), 1u);
}

constexpr int kLayers = 4;
constexpr kv::KvShape kDeepShape{kLayers, 1, 2, 0};

// A chunk cached alone with 4 layers of KV that differ per (layer, token).
std::shared_ptr<kv::ChunkEntry> DeepEntry(const Tokens& tokens) {
  auto entry = reuse::testing_plans::Entry(kv::kRootChunkId, tokens, true);
  auto kv = std::make_shared<kv::ChunkKv>();
  kv->num_layers = kLayers;
  kv->num_kv_heads = 1;
  kv->head_dim = 2;
  kv->num_tokens = static_cast<int>(tokens.size());
  kv->Allocate();
  for (size_t i = 0; i < kv->k.size(); ++i) {
    kv->k[i] = F32ToF16(0.001f * static_cast<float>(i % 997) + 0.25f);
    kv->v[i] = F32ToF16(-0.003f * static_cast<float>(i % 991));
  }
  std::iota(kv->positions.begin(), kv->positions.end(), 0);
  entry->kv = kv;
  return entry;
}

// A storage read held back until released.
class HeldRead {
 public:
  void Hold(kv::ChunkId id) { held_ = id; }
  void BeforeRead(kv::ChunkId id) {
    if (id != held_) return;
    std::unique_lock<std::mutex> lock(mutex_);
    released_cv_.wait(lock, [this] { return released_; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  std::atomic<kv::ChunkId> held_{0};
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
};

// The shard pipeline's order: a call's runs are placed shard (layer group) by shard before
// the next call's, so the first call's first shard can run while a later chunk is still
// being read from storage; every row ends as placing each run at once would leave it.
TEST(KvPreparerTest, PlacesEachCallsKvShardByShardBeforeLaterCalls) {
  HeldRead held;
  kv::testing_caches::OnFlashChunkCache cache([&held](kv::ChunkId id) { held.BeforeRead(id); });
  const Tokens a = Range(100, 40), b = Range(300, 40);
  auto entry_a = DeepEntry(a), entry_b = DeepEntry(b);
  ASSERT_TRUE(cache.Insert(entry_a).ok());
  ASSERT_TRUE(cache.Insert(entry_b).ok());
  // New 20 | A 40 | new 10 | B 40 | new 5: both documents reused at new positions.
  const auto prompt = MakePrompt({Range(900, 20), a, Range(950, 10), b, Range(980, 5)});
  Result<reuse::ReusePlan> plan =
      reuse::PlanReuse(prompt.tokens, prompt.chunks, cache, reuse::PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->num_nonprefix, 80) << plan->Summary();
  auto session = std::move(kv::KvCache::Create(kv::KvShape{kLayers, 1, 2, 256})).value();
  auto expected = std::move(kv::KvCache::Create(kv::KvShape{kLayers, 1, 2, 256})).value();
  std::vector<int32_t> positions(256);
  std::iota(positions.begin(), positions.end(), 0);
  held.Hold(entry_b->id);
  {
    reuse::KvLoader loader(&cache, *plan, kDeepShape);
    KvPreparationOrder order;
    order.call_ends = {70, 115};
    order.shard_first_layers = {2};
    KvPreparer preparer(*plan, loader, *session, positions, kRope, kernels::BestKernels(), order);
    // B's read is held: the first call's shards can still run.
    ASSERT_TRUE(preparer.ReadyUntil(70, 2));
    const std::span<const int32_t> slots = session->slot_positions();
    EXPECT_EQ(slots[20], 20);
    EXPECT_EQ(slots[59], 59);
    EXPECT_EQ(slots[70], -1);
    ASSERT_TRUE(preparer.ReadyUntil(70));
    EXPECT_EQ(slots[70], -1);
    held.Release();
    ASSERT_TRUE(preparer.ReadyUntil(115));
    EXPECT_EQ(slots[70], 70);
  }
  kernels::KernelSet kernels = kernels::BestKernels();
  for (const auto& [begin, entry] : {std::pair{20, entry_a}, std::pair{70, entry_b}}) {
    PlaceChunkKv(*entry->kv, 0, std::span<const int32_t>(positions.data() + begin, 40), *expected,
                 begin, kRope, kernels);
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    for (int slot = 20; slot < 110; ++slot) {
      for (int d = 0; d < 2; ++d) {
        ASSERT_EQ(session->k_row(layer, 0, slot)[d], expected->k_row(layer, 0, slot)[d])
            << layer << " " << slot;
        ASSERT_EQ(session->v_row(layer, 0, slot)[d], expected->v_row(layer, 0, slot)[d])
            << layer << " " << slot;
      }
    }
  }
}

TEST(KvPreparerTest, APlanWithoutReuseNeedsNothing) {
  Fixture f;
  const auto prompt = MakePrompt({Range(900, 20)});
  Result<reuse::ReusePlan> plan =
      reuse::PlanReuse(prompt.tokens, prompt.chunks, f.cache, reuse::PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  reuse::KvLoader loader(nullptr, *plan, kShape);
  KvPreparer preparer(*plan, loader, *f.session, f.positions, kRope, kernels::BestKernels());
  EXPECT_TRUE(preparer.ReadyUntil(20));
  EXPECT_EQ(preparer.wait_ms(), 0.0);
}

}  // namespace
}  // namespace reprise::engine
