#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/json_schema.h"

namespace reprise::server {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "now"}}
])");
const std::vector<std::string> kNames = {"get_weather", "now"};

TEST(ToolCallsTest, QwenCallsAreReadOutOfTheReply) {
  const ToolReply reply = ParseToolCalls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
      kNames);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_EQ(reply.content, "Let me check.");
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(reply.calls[0].arguments), json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(reply.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(reply.calls[0].id, reply.calls[1].id);
  EXPECT_EQ(reply.calls[1].arguments, "{}");
}

TEST(ToolCallsTest, LlamaJsonCallsAndWhatIsNotACall) {
  const ToolReply llama =
      ParseToolCalls(R"({"name": "get_weather", "parameters": {"city": "Oslo"}})", kNames);
  ASSERT_EQ(llama.calls.size(), 1u);
  EXPECT_EQ(json::parse(llama.calls[0].arguments)["city"], "Oslo");
  // Unknown functions, broken JSON and plain text stay content.
  for (const char* text :
       {"<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"now\",</tool_call>", "Just text.", R"({"name": "other"})"}) {
    const ToolReply reply = ParseToolCalls(text, kNames);
    EXPECT_TRUE(reply.calls.empty()) << text;
    EXPECT_EQ(reply.content, text);
  }
  // A call cut off before its closing tag (max_tokens) is still read when it parses.
  EXPECT_EQ(ParseToolCalls("<tool_call>{\"name\": \"now\"}", kNames).calls.size(), 1u);
}

TEST(ToolCallsTest, CallsAndResultsAreRenderedBackAsTheModelWroteThem) {
  Result<std::string> calls = RenderToolCalls(json::parse(R"([{"id": "call_1", "type":
      "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}])"),
                                              "m");
  ASSERT_TRUE(calls.ok());
  EXPECT_EQ(*calls,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Rome\"}}"
            "\n</tool_call>");
  EXPECT_EQ(ParseToolCalls(*calls, kNames).calls.size(), 1u);  // a round trip
  EXPECT_FALSE(RenderToolCalls(json::parse(R"([{"function": 3}])"), "m").ok());
  EXPECT_EQ(RenderToolResult("18 C"), "<tool_response>\n18 C\n</tool_response>");
  const std::string tools = ToolsSystemText(kTools);
  EXPECT_NE(tools.find("<tools>"), std::string::npos);
  EXPECT_NE(tools.find("\"get_weather\""), std::string::npos);
}

TEST(ToolCallsTest, RequiredAndNamedChoicesBecomeASchemaOfValidCalls) {
  Result<std::string> any = ToolCallSchema(kTools, "");
  ASSERT_TRUE(any.ok()) << any.error().ToString();
  Result<engine::JsonSchema> schema = engine::JsonSchema::Parse(*any);
  ASSERT_TRUE(schema.ok());
  EXPECT_TRUE(
      schema->Validate(json::parse(R"({"name": "get_weather", "arguments": {"city": "x"}})")));
  EXPECT_TRUE(schema->Validate(json::parse(R"({"name": "now", "arguments": {}})")));
  EXPECT_FALSE(schema->Validate(json::parse(R"({"name": "get_weather", "arguments": {}})")));
  EXPECT_FALSE(schema->Validate(json::parse(R"({"name": "rm", "arguments": {}})")));
  Result<std::string> named = ToolCallSchema(kTools, "now");
  ASSERT_TRUE(named.ok());
  EXPECT_FALSE(engine::JsonSchema::Parse(*named)->Validate(
      json::parse(R"({"name": "get_weather", "arguments": {"city": "x"}})")));
  EXPECT_FALSE(ToolCallSchema(kTools, "missing").ok());
  const json bad = json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}}}])");
  Result<std::string> refused = ToolCallSchema(bad, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("'pattern' is not supported"), std::string::npos);
}

}  // namespace
}  // namespace reprise::server
