#include "cli/remote_metrics.h"

#include <gtest/gtest.h>

namespace reprise::cli {
namespace {

TEST(RemoteMetricsTest, KeepsTheRemoteTiersSamplesOnly) {
  const std::string text =
      "# HELP reprise_remote_lookups_total Remote tier lookups\n"
      "# TYPE reprise_remote_lookups_total counter\n"
      "reprise_remote_lookups_total{result=\"hit\"} 5\n"
      "reprise_remote_lookups_total{result=\"bad_value\"} 2\n"
      "reprise_remote_bytes_total{direction=\"read\"} 1048576\n"
      "reprise_chunk_hits_total{tier=\"flash\"} 4\n"
      "reprise_remote_broken_total notanumber\n";
  const std::map<std::string, double> samples = ParseRemoteMetrics(text);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples.at("reprise_remote_lookups_total{result=\"hit\"}"), 5);
  EXPECT_EQ(samples.at("reprise_remote_lookups_total{result=\"bad_value\"}"), 2);
  EXPECT_EQ(samples.at("reprise_remote_bytes_total{direction=\"read\"}"), 1048576);
  EXPECT_TRUE(ParseRemoteMetrics("reprise_sessions 2\n").empty());
}

TEST(RemoteMetricsTest, FetchNeedsHostAndPort) {
  EXPECT_EQ(FetchMetrics("localhost").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchMetrics("localhost:0").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchMetrics(":80").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::cli
