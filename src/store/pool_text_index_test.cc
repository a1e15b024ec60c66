#include "store/pool_text_index.h"

#include <gtest/gtest.h>

namespace reprise::store {
namespace {

TEST(PoolTextIndexTest, FindsSharedWordsRarestFirstWithinTheNamespace) {
  PoolTextIndex index;
  index.Add({"app", 1}, "the harbour and the lighthouse");
  index.Add({"app", 2}, "the meadow");
  index.Add({"app", 3}, "the meadow and the lighthouse keeper");
  index.Add({"other", 4}, "lighthouse");
  // "lighthouse" is rarer than "the": 1 and 3 before 2; 3 also holds "keeper".
  EXPECT_EQ(index.Search("app", "The lighthouse KEEPER", 10), (std::vector<kv::ChunkId>{3, 1, 2}));
  EXPECT_EQ(index.Search("app", "lighthouse keeper", 1), (std::vector<kv::ChunkId>{3}));
  EXPECT_EQ(index.Search("other", "lighthouse", 10), (std::vector<kv::ChunkId>{4}));
  EXPECT_TRUE(index.Search("app", "volcano", 10).empty());
  EXPECT_TRUE(index.Search("app", "", 10).empty());
}

TEST(PoolTextIndexTest, RemoveAndReplaceForgetOldWords) {
  PoolTextIndex index;
  index.Add({"app", 1}, "alpha beta");
  index.Add({"app", 2}, "beta gamma");
  index.Remove({"app", 1});
  EXPECT_FALSE(index.Contains({"app", 1}));
  EXPECT_TRUE(index.Search("app", "alpha", 10).empty());
  EXPECT_EQ(index.Search("app", "beta", 10), (std::vector<kv::ChunkId>{2}));
  index.Add({"app", 2}, "delta");
  EXPECT_TRUE(index.Search("app", "beta gamma", 10).empty());
  EXPECT_EQ(index.Search("app", "delta", 10), (std::vector<kv::ChunkId>{2}));
  index.Add({"app", 3}, "");  // nothing to index
  EXPECT_FALSE(index.Contains({"app", 3}));
  EXPECT_EQ(index.num_texts(), 1);
  index.Remove({"app", 9});  // absent: nothing
}

TEST(PoolTextIndexTest, TiesAreOrderedByChunkId) {
  PoolTextIndex index;
  index.Add({"app", 30}, "river");
  index.Add({"app", 10}, "river");
  index.Add({"app", 20}, "river");
  EXPECT_EQ(index.Search("app", "river", 10), (std::vector<kv::ChunkId>{10, 20, 30}));
}

}  // namespace
}  // namespace reprise::store
