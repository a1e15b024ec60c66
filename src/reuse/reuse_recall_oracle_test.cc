#include "reuse/reuse_recall_oracle.h"

#include <gtest/gtest.h>

#include <vector>

#include "reuse/token_test_util.h"

namespace reprise::reuse {
namespace {

using testing_tokens::Concat;
using testing_tokens::Range;
using testing_tokens::Tokens;

TEST(ReuseRecallOracleTest, NothingIsReusableBeforeAnythingWasSeen) {
  ReuseRecallOracle oracle(8);
  EXPECT_EQ(oracle.CountReusable(Range(0, 100)), 0);
}

TEST(ReuseRecallOracleTest, PassagesInANewOrderAndNewNeighboursAreReusable) {
  ReuseRecallOracle oracle(8);
  const Tokens a = Range(100, 50), b = Range(200, 30), c = Range(300, 40), q = Range(900, 5);
  oracle.Add(Concat({a, b, q}));
  // b, then a new passage, then a: both old passages whole, the new one and the question not.
  EXPECT_EQ(oracle.CountReusable(Concat({b, c, a, q})), 30 + 50);
  // A passage cut at the front: what remains is reusable while it is at least a window long.
  EXPECT_EQ(oracle.CountReusable(Concat({c, Tokens(a.begin() + 40, a.end())})), 10);
  EXPECT_EQ(oracle.CountReusable(Concat({c, Tokens(a.begin() + 43, a.end())})), 0);
  // The identical prompt is reusable in full, the question's 5 tokens too (inside a window).
  EXPECT_EQ(oracle.CountReusable(Concat({a, b, q})), 85);
}

TEST(ReuseRecallOracleTest, ShortPromptsAndSpansShorterThanTheWindowCountNothing) {
  ReuseRecallOracle oracle(16);
  oracle.Add(Range(0, 100));
  EXPECT_EQ(oracle.CountReusable(Range(10, 15)), 0);  // shorter than a window
  // 15 seen tokens, then a different one, then 15 more: no window of 16 was seen.
  EXPECT_EQ(oracle.CountReusable(Concat({Range(0, 15), Range(5000, 1), Range(16, 15)})), 0);
  EXPECT_EQ(oracle.CountReusable(Range(40, 16)), 16);
  EXPECT_EQ(oracle.num_windows(), 85u);
}

}  // namespace
}  // namespace reprise::reuse
