#include "workload/workload_stats.h"

#include <gtest/gtest.h>

#include "workload/test_word_count.h"

#include <cctype>

#include "workload/workload.h"

namespace reprise::workload {
namespace {

using test_util::CountWords;

Segment Doc(const std::string& id, const std::string& text) { return {"document", text, id}; }

Request MakeRequest(std::vector<Segment> contexts, const std::string& question) {
  Request request;
  request.segments.push_back({"system", "sys prompt\n", "system:t"});  // 2 words
  for (Segment& segment : contexts) request.segments.push_back(std::move(segment));
  request.segments.push_back({"question", question, ""});
  return request;
}

TEST(WorkloadStatsTest, SplitsPrefixAndNonPrefixReuse) {
  std::vector<Request> requests = {
      MakeRequest({Doc("a", "a a a\n"), Doc("b", "b b\n")}, "q one"),      // 2+3+2+2 = 9
      MakeRequest({Doc("a", "a a a\n"), Doc("c", "c c c c\n")}, "q two"),  // 2+3+4+2 = 11
      MakeRequest({Doc("c", "c c c c\n"), Doc("b", "b b\n")}, "q one"),    // 2+4+2+2 = 10
  };
  WorkloadStats stats = ComputeReuseStats(requests, CountWords);
  EXPECT_EQ(stats.num_requests, 3);
  EXPECT_EQ(stats.num_context_segments, 6);
  // Request 2: a seen; request 3: c and b seen.
  EXPECT_EQ(stats.num_repeated_context_segments, 3);
  EXPECT_DOUBLE_EQ(stats.RepeatedContextFraction(), 0.5);
  EXPECT_EQ(stats.num_distinct_context_sources, 3);
  EXPECT_EQ(stats.num_prompt_tokens, 30);
  EXPECT_EQ(stats.max_request_prompt_tokens, 11);
  EXPECT_DOUBLE_EQ(stats.AvgPromptTokens(), 10.0);
  // Prefixes: request 2 shares [system, a] (5), request 3 shares [system] (2).
  EXPECT_EQ(stats.num_prefix_reusable_tokens, 7);
  // Non-prefix: request 3's c (4) and b (2). The question "q one" repeats but after a
  // different prefix, and questions have no source_id.
  EXPECT_EQ(stats.num_nonprefix_reusable_tokens, 6);
  EXPECT_NE(FormatWorkloadStats(stats).find("requests: 3"), std::string::npos);
}

TEST(WorkloadStatsTest, AWholeRepeatedPromptIsPrefixReuse) {
  std::vector<Request> requests = {MakeRequest({Doc("a", "a\n")}, "same question"),
                                   MakeRequest({Doc("a", "a\n")}, "same question")};
  WorkloadStats stats = ComputeReuseStats(requests, CountWords);
  EXPECT_EQ(stats.num_prefix_reusable_tokens, 5);
  EXPECT_EQ(stats.num_nonprefix_reusable_tokens, 0);
  EXPECT_EQ(stats.num_repeated_context_segments, 1);
}

TEST(WorkloadStatsTest, EmptyWorkload) {
  WorkloadStats stats = ComputeReuseStats({}, CountWords);
  EXPECT_EQ(stats.num_requests, 0);
  EXPECT_EQ(stats.RepeatedContextFraction(), 0.0);
  EXPECT_EQ(stats.AvgPromptTokens(), 0.0);
}

TEST(WorkloadStatsDeathTest, OneIdTwoTextsIsABug) {
  std::vector<Request> requests = {MakeRequest({Doc("a", "one\n")}, "q"),
                                   MakeRequest({Doc("a", "two\n")}, "q")};
  EXPECT_DEATH(ComputeReuseStats(requests, CountWords), "two different texts");
}

TEST(FinishWorkloadTest, AllSkippedIsInvalidArgument) {
  WorkloadOptions options{.max_prompt_tokens = 3, .count_tokens = CountWords};
  Result<Workload> workload = FinishWorkload("t", {}, {}, {.num_skipped_requests = 4}, options);
  ASSERT_FALSE(workload.ok());
  EXPECT_EQ(workload.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(workload.error().message().find("max_prompt_tokens 3"), std::string::npos);

  workload = FinishWorkload("t", {MakeRequest({}, "q")}, {Doc("a", "a\n"), Doc("b", "b\n")},
                            {.num_skipped_requests = 1}, options);
  ASSERT_TRUE(workload.ok());
  EXPECT_EQ(workload->name, "t");
  EXPECT_EQ(workload->stats.num_requests, 1);
  EXPECT_EQ(workload->stats.num_collection_chunks, 2);
  EXPECT_EQ(workload->collection.size(), 2u);
  EXPECT_EQ(workload->stats.num_skipped_requests, 1);
}

TEST(ValidateOptionsTest, NamesTheBadField) {
  WorkloadOptions options{.count_tokens = CountWords};
  EXPECT_TRUE(ValidateOptions(options).ok());
  options.top_chunks = 0;
  EXPECT_NE(ValidateOptions(options).message().find("top_chunks"), std::string::npos);
  options = {.chunk_tokens = 0, .count_tokens = CountWords};
  EXPECT_NE(ValidateOptions(options).message().find("chunk_tokens"), std::string::npos);
  options = {};
  EXPECT_NE(ValidateOptions(options).message().find("count_tokens"), std::string::npos);
}

TEST(ResolveDataPathTest, RelativeAndAbsolute) {
  WorkloadOptions options{.data_dir = "/data"};
  EXPECT_EQ(ResolveDataPath(options, "workloads/x.json"), "/data/workloads/x.json");
  EXPECT_EQ(ResolveDataPath(options, "/abs/x.json"), "/abs/x.json");
  options.data_dir = "/data/";
  EXPECT_EQ(ResolveDataPath(options, "x"), "/data/x");
  options.data_dir = "";
  EXPECT_EQ(ResolveDataPath(options, "x"), "x");
}

}  // namespace
}  // namespace reprise::workload
