#include "workload/prompt_fitting.h"

#include <gtest/gtest.h>

#include "workload/test_word_count.h"

#include <cctype>

namespace reprise::workload {
namespace {

using test_util::CountWords;

PromptParts Parts() {
  PromptParts parts;
  parts.id = "r1";
  parts.system = {"system", "Be brief.\n", "system:x"};            // 2 words
  parts.contexts = {{"document", "one two three\n", "d:1"},        // 3
                    {"document", "four five six seven\n", "d:2"},  // 4
                    {"document", "eight\n", "d:3"}};               // 1
  parts.question = {"question", "Question: why?\nAnswer:", ""};    // 3
  parts.reference_answer = "because";
  return parts;
}

std::vector<std::string> Ids(const Request& request) {
  std::vector<std::string> ids;
  for (const Segment& segment : request.segments) ids.push_back(segment.source_id);
  return ids;
}

TEST(PromptFittingTest, NoLimitKeepsEverythingInOrder) {
  FittedPrompt fitted = FitPrompt(Parts(), 0, CountWords);
  ASSERT_TRUE(fitted.request.has_value());
  EXPECT_EQ(Ids(*fitted.request), (std::vector<std::string>{"system:x", "d:1", "d:2", "d:3", ""}));
  EXPECT_EQ(fitted.num_dropped_contexts, 0);
  EXPECT_EQ(fitted.request->id, "r1");
  EXPECT_EQ(fitted.request->reference_answer, "because");
  EXPECT_EQ(CountPromptTokens(*fitted.request, CountWords), 13);
  EXPECT_EQ(PromptText(*fitted.request),
            "Be brief.\none two three\nfour five six seven\neight\nQuestion: why?\nAnswer:");
}

TEST(PromptFittingTest, DropsTheLowestRankedContextsFirst) {
  // 2 + 3 + 3 = 8 fits 11; adding d:2 (4) would make 12. d:3 is not taken in its place.
  FittedPrompt fitted = FitPrompt(Parts(), 11, CountWords);
  ASSERT_TRUE(fitted.request.has_value());
  EXPECT_EQ(Ids(*fitted.request), (std::vector<std::string>{"system:x", "d:1", ""}));
  EXPECT_EQ(fitted.num_dropped_contexts, 2);
  EXPECT_LE(CountPromptTokens(*fitted.request, CountWords), 11);

  fitted = FitPrompt(Parts(), 13, CountWords);
  EXPECT_EQ(fitted.num_dropped_contexts, 0);
  fitted = FitPrompt(Parts(), 5, CountWords);
  ASSERT_TRUE(fitted.request.has_value());
  EXPECT_EQ(Ids(*fitted.request), (std::vector<std::string>{"system:x", ""}));
  EXPECT_EQ(fitted.num_dropped_contexts, 3);
}

TEST(PromptFittingTest, SkipsWhenSystemAndQuestionAloneDoNotFit) {
  FittedPrompt fitted = FitPrompt(Parts(), 4, CountWords);
  EXPECT_FALSE(fitted.request.has_value());
  EXPECT_EQ(fitted.num_dropped_contexts, 0);
}

}  // namespace
}  // namespace reprise::workload
