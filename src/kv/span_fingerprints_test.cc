#include "kv/span_fingerprints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "base/random.h"

namespace reprise::kv {
namespace {

using Tokens = std::vector<int32_t>;

Tokens RandomTokens(Random& random, size_t n, int vocab = 50000) {
  Tokens t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(random.NextBelow(static_cast<uint64_t>(vocab)));
  return t;
}

bool ShareOne(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return !both.empty();
}

TEST(SpanFingerprintsTest, AnySharedSpanOfTheGuaranteedLengthSharesAFingerprint) {
  Random random(17);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t span = kGuaranteedSpanTokens + random.NextBelow(40);
    const Tokens shared = RandomTokens(random, span, trial % 2 ? 50000 : 30);  // also repetitive
    Tokens a = RandomTokens(random, random.NextBelow(300));
    Tokens b = RandomTokens(random, random.NextBelow(300));
    a.insert(a.begin() + static_cast<ptrdiff_t>(random.NextBelow(a.size() + 1)), shared.begin(),
             shared.end());
    b.insert(b.begin() + static_cast<ptrdiff_t>(random.NextBelow(b.size() + 1)), shared.begin(),
             shared.end());
    ASSERT_TRUE(ShareOne(SpanFingerprints(a), SpanFingerprints(b))) << "trial " << trial;
  }
}

TEST(SpanFingerprintsTest, UnrelatedTextSharesNoneAndTheSetIsSmall) {
  Random random(3);
  const Tokens a = RandomTokens(random, 512);
  const Tokens b = RandomTokens(random, 512);
  const std::vector<uint64_t> fa = SpanFingerprints(a);
  EXPECT_FALSE(ShareOne(fa, SpanFingerprints(b)));
  // Winnowing keeps about 2 / (W + 1) of the positions (W = 25): ~39 of 505.
  EXPECT_GT(fa.size(), 20u);
  EXPECT_LT(fa.size(), 70u);
  EXPECT_TRUE(std::is_sorted(fa.begin(), fa.end()));
  EXPECT_EQ(std::adjacent_find(fa.begin(), fa.end()), fa.end());
}

TEST(SpanFingerprintsTest, ShortSequences) {
  EXPECT_TRUE(SpanFingerprints(Tokens{}).empty());
  EXPECT_TRUE(SpanFingerprints(Tokens(kFingerprintNgram - 1, 5)).empty());
  EXPECT_EQ(SpanFingerprints(Tokens(kFingerprintNgram, 5)).size(), 1u);
  Random random(5);
  const Tokens t = RandomTokens(random, 20);  // shorter than the guaranteed span: one kept
  EXPECT_EQ(SpanFingerprints(t).size(), 1u);
}

// The fingerprints are stored in the catalog: their values are part of its format (the value
// below was computed independently from the definition, in Python).
TEST(SpanFingerprintsTest, ValuesArePartOfTheCatalogFormat) {
  Tokens t(8);
  for (int i = 0; i < 8; ++i) t[static_cast<size_t>(i)] = i + 1;
  const std::vector<uint64_t> f = SpanFingerprints(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], 0x3e5198dcf4e073bdull) << std::hex << f[0];
}

}  // namespace
}  // namespace reprise::kv
