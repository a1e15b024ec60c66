// The span fingerprint index at the sizes docs/design.md §6 and issue 17 plan for (10,000 and
// 100,000 cached chunks of 512 tokens): a `slow`-labelled test that prints add and query
// times (not asserted: `reprise bench` territory) and checks that a query carrying a 32-token
// span of a chunk finds that chunk, ranked first.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/random.h"
#include "kv/span_fingerprint_index.h"

namespace reprise::kv {
namespace {

using Tokens = std::vector<int32_t>;

// Zipf-distributed token ids (rank r has weight r^-exponent), roughly like text.
class ZipfTokens {
 public:
  ZipfTokens(int vocab_size, double exponent) : cdf_(static_cast<size_t>(vocab_size)) {
    double sum = 0;
    for (int rank = 0; rank < vocab_size; ++rank) {
      sum += 1.0 / std::pow(rank + 1.0, exponent);
      cdf_[static_cast<size_t>(rank)] = sum;
    }
    for (double& value : cdf_) value /= sum;
  }
  int32_t Next(Random& random) const {
    const auto at = std::upper_bound(cdf_.begin(), cdf_.end(), random.NextDouble());
    return static_cast<int32_t>(
        std::min<ptrdiff_t>(at - cdf_.begin(), static_cast<ptrdiff_t>(cdf_.size()) - 1));
  }

 private:
  std::vector<double> cdf_;
};

// Indexes many 512-token chunks of Zipf text and times queries that carry a 32-token span of
// one of them; prints the numbers (timings are not asserted) and checks the source ranks
// first.
void RunScaleCheck(int num_chunks) {
  Random random(2025);
  const ZipfTokens zipf(50000, 1.1);
  auto created = SpanFingerprintIndex::Create();
  ASSERT_TRUE(created.ok());
  SpanFingerprintIndex index = std::move(created).value();
  std::vector<Tokens> chunks(static_cast<size_t>(num_chunks));
  for (Tokens& chunk : chunks) {
    chunk.resize(512);
    for (int32_t& token : chunk) token = zipf.Next(random);
  }
  auto start = std::chrono::steady_clock::now();
  for (size_t id = 0; id < chunks.size(); ++id) ASSERT_TRUE(index.Add(id, chunks[id]).ok());
  const double add_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  constexpr int kNumQueries = 100;
  std::vector<Tokens> queries;
  std::vector<uint64_t> sources;
  for (int q = 0; q < kNumQueries; ++q) {
    Tokens query(512);
    for (int32_t& token : query) token = zipf.Next(random);
    const uint64_t source = random.NextBelow(chunks.size());
    std::copy(chunks[source].begin() + 200, chunks[source].begin() + 232, query.begin() + 300);
    queries.push_back(std::move(query));
    sources.push_back(source);
  }
  int num_found_first = 0;
  start = std::chrono::steady_clock::now();
  for (int q = 0; q < kNumQueries; ++q) {
    const auto candidates = index.FindCandidates(queries[static_cast<size_t>(q)], 8);
    num_found_first += !candidates.empty() && candidates[0].chunk_id == sources[q];
  }
  const double query_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kNumQueries;
  std::printf(
      "span fingerprint index: %d chunks x 512 tokens, %lld postings, added in %.0f ms; "
      "512-token query %.3f ms; source ranked first %d/%d\n",
      num_chunks, static_cast<long long>(index.num_postings()), add_ms, query_ms, num_found_first,
      kNumQueries);
  EXPECT_EQ(num_found_first, kNumQueries);
}

TEST(SpanFingerprintIndexScaleTest, TenThousandChunks) { RunScaleCheck(10000); }
TEST(SpanFingerprintIndexScaleTest, HundredThousandChunks) { RunScaleCheck(100000); }

}  // namespace
}  // namespace reprise::kv
