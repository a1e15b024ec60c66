#include "server/stop_sequences.h"

#include <gtest/gtest.h>

namespace reprise::server {
namespace {

TEST(StopSequencesTest, WithoutSequencesEverythingPasses) {
  StopSequences stops({});
  EXPECT_EQ(stops.Feed("Hello"), "Hello");
  EXPECT_EQ(stops.Feed(" world"), " world");
  EXPECT_EQ(stops.Flush(), "");
  EXPECT_FALSE(stops.found());
}

TEST(StopSequencesTest, StopsAtASequenceSplitAcrossPieces) {
  StopSequences stops({"END"});
  std::string out = stops.Feed("one E");
  EXPECT_EQ(out, "one ");  // "E" may begin END: held back
  out += stops.Feed("N");
  EXPECT_FALSE(stops.found());
  out += stops.Feed("D two");
  EXPECT_TRUE(stops.found());
  EXPECT_EQ(out, "one ");
  EXPECT_EQ(stops.Feed("more"), "");
  EXPECT_EQ(stops.Flush(), "");
}

TEST(StopSequencesTest, HeldTextThatIsNotAStopIsReleased) {
  StopSequences stops({"END"});
  std::string out = stops.Feed("an E");
  out += stops.Feed("Nd");
  EXPECT_EQ(out, "an ENd");
  out += stops.Feed(" E");
  out += stops.Flush();
  EXPECT_EQ(out, "an ENd E");
  EXPECT_FALSE(stops.found());
}

TEST(StopSequencesTest, TheEarliestOfSeveralWins) {
  StopSequences stops({"bb", "\n\n"});
  EXPECT_EQ(stops.Feed("a\n\nbb"), "a");
  EXPECT_TRUE(stops.found());
}

}  // namespace
}  // namespace reprise::server
