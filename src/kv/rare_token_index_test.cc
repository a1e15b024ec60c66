#include "kv/rare_token_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "base/random.h"

namespace reprise::kv {
namespace {

using Tokens = std::vector<int32_t>;

RareTokenIndex MakeIndex(const RareTokenIndexOptions& options = {}) {
  auto index = RareTokenIndex::Create(options);
  EXPECT_TRUE(index.ok()) << index.error().ToString();
  return std::move(index).value();
}

Tokens RandomTokens(Random& random, int length, int alphabet, int32_t offset = 0) {
  Tokens tokens(static_cast<size_t>(length));
  for (int32_t& token : tokens) {
    token = offset + static_cast<int32_t>(random.NextBelow(static_cast<uint64_t>(alphabet)));
  }
  return tokens;
}

std::vector<uint64_t> Ids(const std::vector<RareTokenCandidate>& candidates) {
  std::vector<uint64_t> ids;
  for (const RareTokenCandidate& candidate : candidates) ids.push_back(candidate.chunk_id);
  return ids;
}

TEST(RareTokenIndexTest, RejectsBadOptions) {
  EXPECT_FALSE(RareTokenIndex::Create({.max_df_fraction = 0}).ok());
  EXPECT_FALSE(RareTokenIndex::Create({.max_df_fraction = 1.5}).ok());
  EXPECT_FALSE(RareTokenIndex::Create({.max_df_fraction = 0.1, .max_df_floor = 0}).ok());
  EXPECT_TRUE(RareTokenIndex::Create({.max_df_fraction = 1, .max_df_floor = 1}).ok());
}

TEST(RareTokenIndexTest, EmptyIndexAndEmptyQueries) {
  RareTokenIndex index = MakeIndex();
  EXPECT_TRUE(index.FindCandidates(Tokens{1, 2, 3}, 10).empty());
  ASSERT_TRUE(index.Add(1, Tokens{1, 2, 3}).ok());
  ASSERT_TRUE(index.Add(2, Tokens{}).ok());
  EXPECT_EQ(index.num_chunks(), 2);
  EXPECT_TRUE(index.FindCandidates(Tokens{}, 10).empty());
  EXPECT_TRUE(index.FindCandidates(Tokens{1}, 0).empty());
  EXPECT_EQ(Ids(index.FindCandidates(Tokens{3, 3, 3}, 10)), std::vector<uint64_t>{1});
}

TEST(RareTokenIndexTest, FindsTheChunkSharingASpan) {
  Random random(1);
  RareTokenIndex index = MakeIndex();
  std::vector<Tokens> chunks;
  for (uint64_t id = 0; id < 200; ++id) {
    chunks.push_back(RandomTokens(random, 512, 100000));
    ASSERT_TRUE(index.Add(1000 + id, chunks.back()).ok());
  }
  for (uint64_t source : {3u, 77u, 199u}) {
    Tokens query = RandomTokens(random, 512, 100000);
    std::copy(chunks[source].begin() + 300, chunks[source].begin() + 340, query.begin() + 100);
    const auto candidates = index.FindCandidates(query, 5);
    ASSERT_FALSE(candidates.empty());
    EXPECT_EQ(candidates[0].chunk_id, 1000 + source);
    EXPECT_GE(candidates[0].num_shared_tokens, 35);  // 40 tokens, barely any repeats
  }
}

TEST(RareTokenIndexTest, RanksMoreAndRarerSharedTokensFirst) {
  RareTokenIndex index = MakeIndex({.max_df_fraction = 1, .max_df_floor = 100});
  // Tokens 1..10 are each in one chunk; 500..502 in ten chunks each.
  ASSERT_TRUE(index.Add(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).ok());
  ASSERT_TRUE(index.Add(2, Tokens{11, 12, 13, 14, 15}).ok());
  for (uint64_t id = 10; id < 20; ++id) ASSERT_TRUE(index.Add(id, Tokens{500, 501, 502}).ok());
  ASSERT_TRUE(index.Add(3, Tokens{21, 22, 23, 500, 501, 502}).ok());
  // Shares 10 rare tokens with chunk 1, 5 with chunk 2.
  auto candidates =
      index.FindCandidates(Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 10);
  ASSERT_EQ(Ids(candidates), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(candidates[0].num_shared_tokens, 10);
  EXPECT_GT(candidates[0].score, candidates[1].score);
  // Three rare tokens (chunk 3's 21..23, df 1) outweigh three common ones (df 11).
  candidates = index.FindCandidates(Tokens{21, 22, 23, 99}, 10);
  ASSERT_EQ(Ids(candidates), std::vector<uint64_t>{3});
  const double rare_score = candidates[0].score;
  candidates = index.FindCandidates(Tokens{500, 501, 502}, 3);
  ASSERT_EQ(Ids(candidates), (std::vector<uint64_t>{3, 10, 11}));  // equal scores: by id
  EXPECT_LT(candidates[0].score, rare_score);
  // The score is the sum of idf = log((N + 1) / (df + 0.5)) over shared distinct tokens.
  const double n = index.num_chunks();
  EXPECT_DOUBLE_EQ(candidates[0].score, 3 * std::log((n + 1) / (11 + 0.5)));
}

TEST(RareTokenIndexTest, IgnoresFrequentTokens) {
  RareTokenIndex index = MakeIndex({.max_df_fraction = 0.05, .max_df_floor = 16});
  for (uint64_t id = 0; id < 100; ++id) {
    // Token 7 ("the") is in every chunk; 1000 + id in one.
    ASSERT_TRUE(index.Add(id, Tokens{7, 7, static_cast<int32_t>(1000 + id)}).ok());
  }
  EXPECT_EQ(index.DocumentFrequency(7), 100);
  EXPECT_EQ(index.MaxDocumentFrequency(), 16);  // max(16, 0.05 * 100)
  EXPECT_TRUE(index.FindCandidates(Tokens{7}, 10).empty());
  const auto candidates = index.FindCandidates(Tokens{7, 1042}, 10);
  ASSERT_EQ(Ids(candidates), std::vector<uint64_t>{42});
  EXPECT_EQ(candidates[0].num_shared_tokens, 1);
  // The same frequency is not ignored in a small index: 10 chunks of 10 is under the floor.
  RareTokenIndex small = MakeIndex({.max_df_fraction = 0.05, .max_df_floor = 16});
  for (uint64_t id = 0; id < 10; ++id) ASSERT_TRUE(small.Add(id, Tokens{7}).ok());
  EXPECT_EQ(small.FindCandidates(Tokens{7}, 100).size(), 10u);
}

TEST(RareTokenIndexTest, AddAndRemove) {
  RareTokenIndex index = MakeIndex();
  ASSERT_TRUE(index.Add(5, Tokens{1, 2, 2, 3}).ok());
  ASSERT_TRUE(index.Add(6, Tokens{2, 3, 4}).ok());
  EXPECT_EQ(index.num_postings(), 6);
  EXPECT_EQ(index.DocumentFrequency(2), 2);
  const Status duplicate = index.Add(5, Tokens{9});
  EXPECT_EQ(duplicate.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Remove(99).code(), StatusCode::kNotFound);

  ASSERT_TRUE(index.Remove(5).ok());
  EXPECT_FALSE(index.Contains(5));
  EXPECT_EQ(index.num_chunks(), 1);
  EXPECT_EQ(index.num_postings(), 3);
  EXPECT_EQ(index.DocumentFrequency(1), 0);
  EXPECT_EQ(index.DocumentFrequency(2), 1);
  EXPECT_TRUE(index.FindCandidates(Tokens{1}, 10).empty());
  EXPECT_EQ(Ids(index.FindCandidates(Tokens{1, 2}, 10)), std::vector<uint64_t>{6});
  EXPECT_EQ(index.Remove(5).code(), StatusCode::kNotFound);
  // The id can come back, with other tokens, into the freed slot.
  ASSERT_TRUE(index.Add(5, Tokens{1}).ok());
  EXPECT_EQ(Ids(index.FindCandidates(Tokens{1}, 10)), std::vector<uint64_t>{5});
  ASSERT_TRUE(index.Remove(6).ok());
  ASSERT_TRUE(index.Remove(5).ok());
  EXPECT_EQ(index.num_postings(), 0);
  EXPECT_TRUE(index.FindCandidates(Tokens{1, 2, 3, 4}, 10).empty());
}

// A naive model: chunk id -> distinct tokens; scores computed from scratch.
std::vector<RareTokenCandidate> NaiveCandidates(const std::map<uint64_t, std::set<int32_t>>& chunks,
                                                const Tokens& query, int max_df,
                                                int max_candidates) {
  std::map<int32_t, int> df;
  for (const auto& [id, tokens] : chunks) {
    for (int32_t token : tokens) ++df[token];
  }
  const std::set<int32_t> distinct(query.begin(), query.end());
  std::vector<RareTokenCandidate> candidates;
  for (const auto& [id, tokens] : chunks) {
    RareTokenCandidate candidate{id, 0, 0};
    for (int32_t token : distinct) {  // ascending, like the index
      if (!tokens.contains(token) || df[token] > max_df) continue;
      candidate.score += std::log((chunks.size() + 1.0) / (df[token] + 0.5));
      ++candidate.num_shared_tokens;
    }
    if (candidate.num_shared_tokens > 0) candidates.push_back(candidate);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.score != b.score ? a.score > b.score : a.chunk_id < b.chunk_id;
  });
  if (candidates.size() > static_cast<size_t>(max_candidates)) candidates.resize(max_candidates);
  return candidates;
}

// Random adds and removes against the naive model; a second index receiving the same final
// contents in another order gives the same answers (the order is deterministic).
TEST(RareTokenIndexTest, MatchesNaiveModelUnderChurn) {
  Random random(99);
  const RareTokenIndexOptions options = {.max_df_fraction = 0.2, .max_df_floor = 4};
  RareTokenIndex index = MakeIndex(options);
  std::map<uint64_t, std::set<int32_t>> model;
  std::map<uint64_t, Tokens> contents;
  for (int step = 0; step < 3000; ++step) {
    const uint64_t id = random.NextBelow(60);
    if (model.contains(id) && random.NextBelow(2) == 0) {
      ASSERT_TRUE(index.Remove(id).ok());
      model.erase(id);
      contents.erase(id);
    } else if (!model.contains(id)) {
      const Tokens tokens =
          RandomTokens(random, static_cast<int>(random.NextBelow(30)), 1 + step % 80);
      ASSERT_TRUE(index.Add(id, tokens).ok());
      model[id] = std::set<int32_t>(tokens.begin(), tokens.end());
      contents[id] = tokens;
    }
    if (step % 10 == 0) {
      const Tokens query = RandomTokens(random, static_cast<int>(random.NextBelow(20)), 80);
      const int max_candidates = 1 + static_cast<int>(random.NextBelow(12));
      ASSERT_EQ(index.FindCandidates(query, max_candidates),
                NaiveCandidates(model, query, index.MaxDocumentFrequency(), max_candidates))
          << "step " << step;
    }
  }
  int64_t pairs = 0;
  for (const auto& [id, tokens] : model) pairs += static_cast<int64_t>(tokens.size());
  EXPECT_EQ(index.num_postings(), pairs);

  RareTokenIndex rebuilt = MakeIndex(options);
  for (auto it = contents.rbegin(); it != contents.rend(); ++it) {
    ASSERT_TRUE(rebuilt.Add(it->first, it->second).ok());
  }
  for (int q = 0; q < 50; ++q) {
    const Tokens query = RandomTokens(random, 15, 80);
    EXPECT_EQ(index.FindCandidates(query, 100), rebuilt.FindCandidates(query, 100));
  }
}

}  // namespace
}  // namespace reprise::kv
