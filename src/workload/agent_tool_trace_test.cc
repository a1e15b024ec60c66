// The agent-tools trace: on the real SkillsBench file (../shared/data, skipped when absent),
// each task's steps grow by one call and its result, the tools are the same for every request,
// and each `tool` message answers the call just before it; the helpers on hand-made text.
#include "workload/agent_tool_trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/shared_data.h"
#include "workload/skills_workload.h"
#include "workload/test_word_count.h"

namespace reprise::workload {
namespace {

using test_util::CountWords;

ServeTraceOptions Options(const std::string& skills_file, int num_requests) {
  ServeTraceOptions options;
  options.data_dir = skills_file.substr(0, skills_file.size() - kSkillsBenchFile.size());
  options.num_requests = num_requests;
  options.count_tokens = CountWords;
  return options;
}

// The task of a step id "agent-tools:<task>#<step>".
std::string TaskOf(const std::string& id) { return id.substr(0, id.rfind('#')); }

TEST(AgentToolTraceTest, StepsGrowByACallAndItsResultWithTheSameToolsEachStep) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  ServeTraceOptions options = Options(file, 12);
  options.max_tool_result_tokens = 50;
  options.max_catalog_skills = 20;
  Result<ServeTrace> trace = BuildServeTrace(ServeTraceKind::kAgentTools, options);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  ASSERT_EQ(trace->requests.size(), 12u);
  const std::vector<TraceTool>& tools = trace->requests.front().tools;
  EXPECT_GE(tools.size(), 20u);
  std::set<std::string> names;
  for (const TraceTool& tool : tools) {
    EXPECT_TRUE(names.insert(tool.name).second) << tool.name;
    EXPECT_EQ(tool.name, ToolNameOf(tool.name));
    EXPECT_FALSE(tool.description.empty()) << tool.name;
  }
  int num_later_steps = 0;
  std::set<std::string> call_ids;
  for (size_t i = 0; i < trace->requests.size(); ++i) {
    const TraceRequest& step = trace->requests[i];
    SCOPED_TRACE(step.id);
    ASSERT_EQ(step.tools.size(), tools.size());
    for (size_t t = 0; t < tools.size(); ++t) {
      EXPECT_EQ(step.tools[t].name, tools[t].name);
      EXPECT_EQ(step.tools[t].description, tools[t].description);
    }
    EXPECT_EQ(step.system, kAgentToolsSystemPrompt);
    EXPECT_FALSE(step.user.empty());
    ASSERT_EQ(step.transcript.size() % 2, 0u);
    const size_t n = step.transcript.size() / 2;
    EXPECT_EQ(step.phase, "step " + std::to_string(n + 1));
    for (size_t m = 0; m < step.transcript.size(); m += 2) {
      const TraceMessage& call = step.transcript[m];
      const TraceMessage& result = step.transcript[m + 1];
      EXPECT_EQ(call.role, "assistant");
      ASSERT_EQ(call.tool_calls.size(), 1u);
      EXPECT_TRUE(names.contains(call.tool_calls[0].name)) << call.tool_calls[0].name;
      const nlohmann::json arguments = nlohmann::json::parse(call.tool_calls[0].arguments);
      EXPECT_TRUE(arguments["request"].is_string());
      EXPECT_EQ(result.role, "tool");
      EXPECT_EQ(result.tool_call_id, call.tool_calls[0].id);
      EXPECT_FALSE(result.content.empty());
      EXPECT_LE(CountWords(result.content), 50);
      call_ids.insert(call.tool_calls[0].id);
    }
    if (n > 0) {
      ++num_later_steps;
      // The step before is the same task's, and this one is it plus one exchange.
      const TraceRequest& before = trace->requests[i - 1];
      ASSERT_EQ(TaskOf(before.id), TaskOf(step.id));
      ASSERT_EQ(before.transcript.size() + 2, step.transcript.size());
      EXPECT_EQ(before.user, step.user);
      for (size_t m = 0; m < before.transcript.size(); ++m) {
        EXPECT_EQ(before.transcript[m].content, step.transcript[m].content);
        EXPECT_EQ(before.transcript[m].tool_call_id, step.transcript[m].tool_call_id);
      }
    } else if (i > 0) {
      EXPECT_NE(TaskOf(trace->requests[i - 1].id), TaskOf(step.id));
    }
  }
  EXPECT_GT(num_later_steps, 4);
  // A call id names one call of the trace (steps repeat the calls before them).
  EXPECT_EQ(call_ids.size(), static_cast<size_t>(num_later_steps));

  // The chat window sends each step's transcript after the instruction.
  ChatWindow window(0, CountWords);
  const TraceRequest& last = trace->requests.back();
  const std::vector<TraceMessage> messages = window.Messages(last);
  ASSERT_EQ(messages.size(), 2 + last.transcript.size());
  EXPECT_EQ(messages[1].content, last.user);
  EXPECT_EQ(messages.back().tool_call_id, last.transcript.back().tool_call_id);

  Result<ServeTrace> again = BuildServeTrace(ServeTraceKind::kAgentTools, options);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->requests.size(), trace->requests.size());
  for (size_t i = 0; i < trace->requests.size(); ++i) {
    EXPECT_EQ(again->requests[i].id, trace->requests[i].id);
  }
}

TEST(AgentToolTraceTest, StepsThatPassThePromptBudgetAreLeftOut) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  ServeTraceOptions options = Options(file, 20);
  options.max_tool_result_tokens = 400;
  Result<ServeTrace> whole = BuildServeTrace(ServeTraceKind::kAgentTools, options);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  options.max_prompt_tokens = 1500;
  Result<ServeTrace> fitted = BuildServeTrace(ServeTraceKind::kAgentTools, options);
  ASSERT_TRUE(fitted.ok()) << fitted.error().ToString();
  EXPECT_LT(fitted->requests.size(), whole->requests.size());
  EXPECT_GT(fitted->requests.size(), 0u);
  options.max_prompt_tokens = 10;
  Result<ServeTrace> none = BuildServeTrace(ServeTraceKind::kAgentTools, options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), StatusCode::kInvalidArgument);
  options.max_prompt_tokens = 0;
  options.max_tool_result_tokens = 0;
  EXPECT_EQ(BuildServeTrace(ServeTraceKind::kAgentTools, options).error().code(),
            StatusCode::kInvalidArgument);
}

TEST(AgentToolTraceTest, NamesToolsAsOpenAiAllowsAndCutsTextAtWords) {
  EXPECT_EQ(ToolNameOf("power-flow-data@1a2b"), "power-flow-data_1a2b");
  EXPECT_EQ(ToolNameOf("a b.c"), "a_b_c");
  EXPECT_EQ(ToolNameOf(std::string(80, 'x')).size(), 64u);
  EXPECT_EQ(CutToTokens("one two three four", 10, CountWords), "one two three four");
  EXPECT_EQ(CutToTokens("one two  three four", 2, CountWords), "one two");
  EXPECT_EQ(CutToTokens("one\ntwo three", 1, CountWords), "one");
  EXPECT_EQ(CutToTokens("one two", 0, CountWords), "");
}

}  // namespace
}  // namespace reprise::workload
