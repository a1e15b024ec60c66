#include "server/connection_limits.h"

#include <gtest/gtest.h>

#include <vector>

namespace reprise::server {
namespace {

TEST(ConnectionLimitsTest, CapsEachClientAndTheTotal) {
  ConnectionLimits limits(/*max_total=*/5, /*max_per_client=*/3);
  std::string refusal;
  std::vector<ConnectionLimits::Ticket> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(limits.Admit("10.0.0.1", &refusal));
    EXPECT_TRUE(held.back().admitted());
    EXPECT_EQ(refusal, "");
  }
  ConnectionLimits::Ticket fourth = limits.Admit("10.0.0.1", &refusal);
  EXPECT_FALSE(fourth.admitted());
  EXPECT_NE(refusal.find("per client"), std::string::npos) << refusal;
  held.push_back(limits.Admit("10.0.0.2", &refusal));
  held.push_back(limits.Admit("10.0.0.3", &refusal));
  EXPECT_TRUE(held.back().admitted());
  ConnectionLimits::Ticket sixth = limits.Admit("10.0.0.4", &refusal);
  EXPECT_FALSE(sixth.admitted());
  EXPECT_NE(refusal.find("--max-connections"), std::string::npos) << refusal;
  EXPECT_EQ(limits.open(), 5);
  EXPECT_EQ(limits.open_from("10.0.0.1"), 3);
  // A ticket given back makes room, for its client and in all.
  held.erase(held.begin());
  EXPECT_EQ(limits.open(), 4);
  EXPECT_TRUE(limits.Admit("10.0.0.1", &refusal).admitted());
  held.clear();
  EXPECT_EQ(limits.open(), 0);
  EXPECT_EQ(limits.open_from("10.0.0.1"), 0);
}

TEST(ConnectionLimitsTest, TicketsMoveWithoutCountingTwice) {
  ConnectionLimits limits(2, 2);
  std::string refusal;
  ConnectionLimits::Ticket a = limits.Admit("c", &refusal);
  ConnectionLimits::Ticket b = std::move(a);
  EXPECT_FALSE(a.admitted());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(b.admitted());
  EXPECT_EQ(limits.open(), 1);
  ConnectionLimits::Ticket c = limits.Admit("c", &refusal);
  c = std::move(b);
  EXPECT_EQ(limits.open(), 1);
}

}  // namespace
}  // namespace reprise::server
