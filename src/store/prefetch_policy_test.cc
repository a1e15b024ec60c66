#include "store/prefetch_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace reprise::store {
namespace {

using Ids = std::vector<uint64_t>;

ChunkInfo Chunk(uint64_t id, uint64_t document = 0, int64_t bytes = 100, bool exact = true) {
  ChunkInfo chunk;
  chunk.id = id;
  chunk.document = document;
  chunk.exact = exact;
  chunk.bytes = bytes;
  chunk.num_tokens = 10;
  return chunk;
}

LocalityModel Model() { return std::move(LocalityModel::Create({})).value(); }

TEST(PrefetchPolicyTest, PicksChunksCoAccessedWithTheLastRequest) {
  LocalityModel model = Model();
  // A login skill (1) always travels with the SMS skill (2); 3 is used on its own.
  for (int r = 0; r < 4; ++r) {
    model.RecordRequest(std::vector<ChunkInfo>{Chunk(1), Chunk(2)}, 100.0 * r);
    model.RecordRequest(std::vector<ChunkInfo>{Chunk(3)}, 100.0 * r + 50);
  }
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1)}, 1000);  // login again, later
  const std::vector<ChunkInfo> flash = {Chunk(2), Chunk(3)};
  const PrefetchSelection picked = SelectPrefetch(flash, model, 1000, 1000, PrefetchOptions{});
  EXPECT_EQ(picked.ids, (Ids{2}));
  EXPECT_EQ(picked.bytes, 100);
}

TEST(PrefetchPolicyTest, PicksChunksOfTheDocumentInUse) {
  LocalityModel model = Model();
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1, /*document=*/7)}, 0);
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(2, /*document=*/8)}, 10000);
  // 3 and 4 were never used; 3 belongs to the document just read.
  const std::vector<ChunkInfo> flash = {Chunk(4, 7), Chunk(3, 8)};
  EXPECT_EQ(SelectPrefetch(flash, model, 10000, 1000, PrefetchOptions{}).ids, (Ids{3}));
}

TEST(PrefetchPolicyTest, RespectsThresholdBudgetAndOrder) {
  LocalityModel model = Model();
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1, 7)}, 0);
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(2, 8)}, 600);  // document 7 one half-life ago
  // Prefetch scores: document 8 -> spatial 1 -> 0.5 (semantic 0); document 7 -> 0.25.
  std::vector<ChunkInfo> flash = {Chunk(10, 7), Chunk(11, 8, 300), Chunk(12, 8, 100),
                                  Chunk(13, 8, 100)};
  PrefetchOptions options;
  options.threshold = 0.2;
  // Best first (ties by id); 11 does not fit the remaining budget, 13 still does.
  PrefetchSelection picked = SelectPrefetch(flash, model, 600, 250, options);
  EXPECT_EQ(picked.ids, (Ids{12, 13}));
  EXPECT_EQ(picked.bytes, 200);
  picked = SelectPrefetch(flash, model, 600, 10000, options);
  EXPECT_EQ(picked.ids, (Ids{11, 12, 13, 10}));
  options.threshold = 0.4;  // document 7 no longer qualifies
  EXPECT_EQ(SelectPrefetch(flash, model, 600, 10000, options).ids, (Ids{11, 12, 13}));
  EXPECT_TRUE(SelectPrefetch(flash, model, 600, 0, options).ids.empty());
}

TEST(PrefetchPolicyTest, SkipsPoolChunksAndNonPrefixChunks) {
  LocalityModel model = Model();
  model.RecordRequest(std::vector<ChunkInfo>{Chunk(1, 7)}, 0);
  std::vector<ChunkInfo> flash = {Chunk(2, 7), Chunk(3, 7, 100, /*exact=*/false), Chunk(4, 7)};
  flash[2].in_pool = true;
  EXPECT_EQ(SelectPrefetch(flash, model, 0, 1000, PrefetchOptions{}).ids, (Ids{2}));
  PrefetchOptions any;
  any.exact_only = false;
  // Equal scores: exact chunks first.
  EXPECT_EQ(SelectPrefetch(flash, model, 0, 1000, any).ids, (Ids{2, 3}));
}

}  // namespace
}  // namespace reprise::store
