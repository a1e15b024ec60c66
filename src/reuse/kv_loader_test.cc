#include "reuse/kv_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "kv/memory_chunk_cache.h"
#include "reuse/planner_test_util.h"

namespace reprise::reuse {
namespace {

using testing_plans::CachePath;
using testing_plans::Entry;
using testing_plans::MakePrompt;
using testing_tokens::Range;
using testing_tokens::Tokens;

constexpr kv::KvShape kShape{1, 1, 2, 0};  // planner_test_util's entries

// A cache whose index describes chunks without their KV, as a store's flash tier does: Peek,
// PeekByContent, Children and FindCandidates give entries with tokens only; Find loads (and
// may be made to return something else: a damaged or replaced file).
class FlashLikeCache : public kv::ChunkCache {
 public:
  Status Insert(std::shared_ptr<const kv::ChunkEntry> entry) override {
    return inner_.Insert(std::move(entry));
  }
  std::shared_ptr<const kv::ChunkEntry> Find(kv::ChunkId id) override {
    ++num_finds;
    std::shared_ptr<const kv::ChunkEntry> entry = inner_.Find(id);
    return on_find && entry ? on_find(entry) : entry;
  }
  std::shared_ptr<const kv::ChunkEntry> Peek(kv::ChunkId id) override {
    return WithoutKv(inner_.Peek(id));
  }
  std::shared_ptr<const kv::ChunkEntry> PeekByContent(kv::ContentHash content) override {
    return WithoutKv(inner_.PeekByContent(content));
  }
  bool Contains(kv::ChunkId id, bool require_exact) override {
    return inner_.Contains(id, require_exact);
  }
  std::optional<kv::ChunkLink> LinkOf(kv::ChunkId id) override { return inner_.LinkOf(id); }
  std::vector<std::shared_ptr<const kv::ChunkEntry>> Children(kv::ChunkId parent) override {
    std::vector<std::shared_ptr<const kv::ChunkEntry>> out;
    for (const auto& e : inner_.Children(parent)) out.push_back(WithoutKv(e));
    return out;
  }
  std::shared_ptr<const kv::ChunkEntry> FindByContent(kv::ContentHash content) override {
    ++num_finds;
    return inner_.FindByContent(content);
  }
  std::vector<kv::ChunkCandidate> FindCandidates(std::span<const int32_t> tokens,
                                                 std::string_view text,
                                                 int max_candidates) override {
    std::vector<kv::ChunkCandidate> out = inner_.FindCandidates(tokens, text, max_candidates);
    for (kv::ChunkCandidate& c : out) c.entry = WithoutKv(c.entry);
    return out;
  }
  kv::ChunkCacheStats stats() override { return inner_.stats(); }

  std::atomic<int> num_finds{0};
  // Replaces what Find returns (set before planning; called on the loader's thread).
  std::function<std::shared_ptr<const kv::ChunkEntry>(std::shared_ptr<const kv::ChunkEntry>)>
      on_find;

 private:
  static std::shared_ptr<const kv::ChunkEntry> WithoutKv(
      const std::shared_ptr<const kv::ChunkEntry>& entry) {
    if (!entry) return nullptr;
    auto skeleton = std::make_shared<kv::ChunkEntry>(*entry);
    skeleton->kv = nullptr;
    return skeleton;
  }
  kv::MemoryChunkCache inner_{1 << 24};
};

const Tokens kA = Range(100, 40);
const Tokens kB = Range(200, 40);
const Tokens kC = Range(300, 40);

TEST(KvLoaderTest, PlanningLoadsNothingAndTheLoaderReadsEachSourceOnce) {
  FlashLikeCache cache;
  CachePath(cache, {kA, kB});
  CachePath(cache, {kC});
  const auto prompt = MakePrompt({kA, kB, kC, Range(900, 5)});
  Result<ReusePlan> plan = PlanReuse(prompt.tokens, prompt.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(cache.num_finds, 0) << "planning read KV";
  EXPECT_EQ(plan->num_prefix, 80);
  EXPECT_EQ(plan->num_nonprefix, 40);
  ASSERT_EQ(plan->sources.size(), 3u);
  for (const auto& source : plan->sources) EXPECT_EQ(source->kv, nullptr);

  KvLoader loader(&cache, *plan, kShape);
  for (int s = 0; s < 3; ++s) {
    const std::shared_ptr<const kv::ChunkKv> kv = loader.Wait(s);
    ASSERT_NE(kv, nullptr) << s;
    EXPECT_EQ(kv->num_tokens, 40);
  }
  EXPECT_TRUE(loader.WaitAll().empty());
  EXPECT_EQ(loader.num_read(), 3);
  EXPECT_EQ(loader.num_from_memory(), 0);
  EXPECT_EQ(cache.num_finds, 3);
}

TEST(KvLoaderTest, SourcesInMemoryAreReferencesCountedOnce) {
  kv::MemoryChunkCache cache(1 << 24);
  CachePath(cache, {kA, kB});
  const auto prompt = MakePrompt({kA, kB, Range(900, 5)});
  Result<ReusePlan> plan = PlanReuse(prompt.tokens, prompt.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(cache.stats().hits, 0) << "planning counted a use";
  KvLoader loader(&cache, *plan, kShape);
  EXPECT_EQ(loader.Wait(0), plan->sources[0]->kv);
  EXPECT_EQ(loader.Wait(1), plan->sources[1]->kv);
  EXPECT_TRUE(loader.WaitAll().empty());
  EXPECT_EQ(loader.num_from_memory(), 2);
  EXPECT_EQ(loader.num_read(), 0);
  EXPECT_EQ(cache.stats().hits, 2);
}

// What Find returns instead of the planned chunk, and whether the loader must refuse it.
struct Tampering {
  const char* name;
  std::function<void(kv::ChunkEntry&)> change;
};

TEST(KvLoaderTest, KvThatIsNotWhatThePlanExpectedIsNeverUsed) {
  const Tampering cases[] = {
      {"other tokens", [](kv::ChunkEntry& e) { e.tokens[3] += 1; }},
      {"other content hash", [](kv::ChunkEntry& e) { e.content ^= 1; }},
      {"other id", [](kv::ChunkEntry& e) { e.id ^= 1; }},
      {"fewer KV rows",
       [](kv::ChunkEntry& e) {
         auto kv = std::make_shared<kv::ChunkKv>(*e.kv);
         kv->num_tokens -= 1;
         kv->Allocate();
         e.kv = kv;
       }},
      {"another model's shape",
       [](kv::ChunkEntry& e) {
         auto kv = std::make_shared<kv::ChunkKv>(*e.kv);
         kv->head_dim = 4;
         kv->Allocate();
         e.kv = kv;
       }},
      {"no KV", [](kv::ChunkEntry& e) { e.kv = nullptr; }},
  };
  for (const Tampering& tampering : cases) {
    FlashLikeCache cache;
    CachePath(cache, {kA});
    CachePath(cache, {kC});
    const kv::ChunkId c_id =
        kv::ChainId(kv::kRootChunkId, kv::HashTokens(testing_plans::kFingerprint, kC));
    cache.on_find = [&](std::shared_ptr<const kv::ChunkEntry> entry) {
      if (entry->id != c_id) return entry;
      auto changed = std::make_shared<kv::ChunkEntry>(*entry);
      tampering.change(*changed);
      return std::shared_ptr<const kv::ChunkEntry>(std::move(changed));
    };
    const auto prompt = MakePrompt({kA, kC, Range(900, 5)});
    Result<ReusePlan> plan = PlanReuse(prompt.tokens, prompt.chunks, cache, PlannerOptions{});
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->sources.size(), 2u);
    KvLoader loader(&cache, *plan, kShape);
    EXPECT_NE(loader.Wait(0), nullptr) << tampering.name;
    EXPECT_EQ(loader.Wait(1), nullptr) << tampering.name;
    EXPECT_EQ(loader.WaitAll(), std::vector<kv::ChunkId>{c_id}) << tampering.name;

    // Planned again without it, the chunk is computed anew.
    PlannerOptions again;
    again.excluded = {c_id};
    Result<ReusePlan> replanned = PlanReuse(prompt.tokens, prompt.chunks, cache, again);
    ASSERT_TRUE(replanned.ok());
    EXPECT_EQ(replanned->num_prefix, 40) << tampering.name;
    EXPECT_EQ(replanned->num_nonprefix, 0) << tampering.name;
    EXPECT_EQ(replanned->sources.size(), 1u) << tampering.name;
  }
}

TEST(KvLoaderTest, AChunkEvictedAfterPlanningIsReportedNotUsed) {
  FlashLikeCache cache;
  CachePath(cache, {kA, kB});
  cache.on_find = [](std::shared_ptr<const kv::ChunkEntry>) {
    return std::shared_ptr<const kv::ChunkEntry>();
  };
  const auto prompt = MakePrompt({kA, kB, Range(900, 5)});
  Result<ReusePlan> plan = PlanReuse(prompt.tokens, prompt.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  KvLoader loader(&cache, *plan, kShape);
  EXPECT_EQ(loader.WaitAll().size(), 2u);
  EXPECT_EQ(loader.Wait(0), nullptr);
}

TEST(KvLoaderTest, ASourceNoTokenUsesIsNeitherLoadedNorFailed) {
  FlashLikeCache cache;
  CachePath(cache, {kA});
  // The prompt is the cached chunk alone: its last token is made new, the rest reused.
  const auto prompt = MakePrompt({kA});
  Result<ReusePlan> plan = PlanReuse(prompt.tokens, prompt.chunks, cache, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  ReusePlan unused = *plan;
  for (TokenSource& t : unused.tokens) t = TokenSource{};
  KvLoader loader(&cache, unused, kShape);
  EXPECT_TRUE(loader.WaitAll().empty());
  EXPECT_EQ(loader.num_read(), 0);
  EXPECT_EQ(cache.num_finds, 0);
}

}  // namespace
}  // namespace reprise::reuse
