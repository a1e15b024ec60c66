#include "kv/span_fingerprint_index.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/random.h"

namespace reprise::kv {
namespace {

using Tokens = std::vector<int32_t>;

Tokens RandomTokens(Random& random, size_t n) {
  Tokens t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(random.NextBelow(50000));
  return t;
}

Tokens Concat(std::initializer_list<const Tokens*> parts) {
  Tokens out;
  for (const Tokens* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

SpanFingerprintIndex MakeIndex(SpanFingerprintIndexOptions options = {}) {
  auto created = SpanFingerprintIndex::Create(options);
  EXPECT_TRUE(created.ok());
  return std::move(created).value();
}

TEST(SpanFingerprintIndexTest, FindsAPassageCachedInsideALargerChunk) {
  Random random(1);
  SpanFingerprintIndex index = MakeIndex();
  const Tokens passage = RandomTokens(random, 120);
  const Tokens before = RandomTokens(random, 200), after = RandomTokens(random, 150);
  for (uint64_t id = 10; id < 30; ++id) ASSERT_TRUE(index.Add(id, RandomTokens(random, 512)).ok());
  ASSERT_TRUE(index.Add(7, Concat({&before, &passage, &after})).ok());
  // The passage, among other neighbours.
  const Tokens other = RandomTokens(random, 90);
  const auto found = index.FindCandidates(Concat({&other, &passage}), 8);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].chunk_id, 7u);
  EXPECT_EQ(found.size(), 1u);  // nothing unrelated
}

TEST(SpanFingerprintIndexTest, EverySourceIsFoundNotOnlyTheFirstEight) {
  Random random(2);
  SpanFingerprintIndex index = MakeIndex();
  std::vector<Tokens> passages;
  for (uint64_t id = 0; id < 12; ++id) {
    passages.push_back(RandomTokens(random, 40 + 10 * id));
    ASSERT_TRUE(index.Add(id, passages.back()).ok());
  }
  Tokens query;
  for (const Tokens& p : passages) query.insert(query.end(), p.begin(), p.end());
  const auto found = index.FindCandidates(query, 64);
  ASSERT_EQ(found.size(), 12u);
  // Best first: the longest passages share the most fingerprints.
  EXPECT_GE(found.front().num_shared, found.back().num_shared);
  EXPECT_EQ(index.FindCandidates(query, 3).size(), 3u);
  EXPECT_TRUE(index.FindCandidates(query, 0).empty());
}

TEST(SpanFingerprintIndexTest, RemoveForgetsAndBoilerplateIsIgnored) {
  Random random(3);
  SpanFingerprintIndex index = MakeIndex({.max_df_fraction = 0.05, .max_df_floor = 4});
  const Tokens header = RandomTokens(random, 40);  // in every chunk: boilerplate
  for (uint64_t id = 0; id < 10; ++id) {
    const Tokens body = RandomTokens(random, 200);
    ASSERT_TRUE(index.Add(id, Concat({&header, &body})).ok());
  }
  EXPECT_TRUE(index.FindCandidates(header, 8).empty());
  EXPECT_FALSE(index.Add(3, header).ok());  // already indexed
  const int64_t postings = index.num_postings();
  ASSERT_TRUE(index.Remove(3).ok());
  EXPECT_LT(index.num_postings(), postings);
  EXPECT_FALSE(index.Contains(3));
  EXPECT_EQ(index.Remove(3).code(), StatusCode::kNotFound);
  EXPECT_EQ(index.num_chunks(), 9);
}

TEST(SpanFingerprintIndexTest, OptionsAreChecked) {
  EXPECT_FALSE(SpanFingerprintIndex::Create({.max_df_fraction = 0}).ok());
  EXPECT_FALSE(SpanFingerprintIndex::Create({.max_df_fraction = 1.5}).ok());
  EXPECT_FALSE(SpanFingerprintIndex::Create({.max_df_floor = 0}).ok());
}

}  // namespace
}  // namespace reprise::kv
