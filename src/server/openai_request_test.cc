#include "server/openai_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace reprise::server {
namespace {

const RequestLimits kLimits;

Result<ServeRequest> Chat(const std::string& body) {
  return ParseChatCompletionRequest(body, kLimits);
}

std::string ErrorOf(const Result<ServeRequest>& r) {
  return r.ok() ? "(ok)" : r.error().message();
}

TEST(OpenAiRequestTest, ParsesAChatRequest) {
  Result<ServeRequest> r = Chat(R"({
    "model": "m", "messages": [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                            {"type": "text", "text": " there"}]}],
    "max_tokens": 7, "temperature": 0, "top_p": 0.5, "seed": 42, "stream": true,
    "stream_options": {"include_usage": true}, "stop": ["\n\n", "END"],
    "documents": [{"id": "a", "text": "Doc A"}, {"id": "7", "text": "Doc B"}],
    "skills": [{"id": "s", "text": "Skill"}]})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n\n", "END"}));
  const GenerateRequest& g = r->generate;
  EXPECT_TRUE(g.chat);
  ASSERT_EQ(g.messages.size(), 2u);
  EXPECT_EQ(g.messages[0].role, "system");
  EXPECT_EQ(g.messages[1].content, "Hi there");
  EXPECT_EQ(g.max_new_tokens, 7);
  EXPECT_EQ(g.temperature, 0.0f);
  EXPECT_EQ(g.top_p, 0.5f);
  EXPECT_EQ(g.seed, 42u);
  ASSERT_EQ(g.documents.size(), 2u);
  EXPECT_EQ(g.documents[1].id, "7");
  EXPECT_EQ(g.documents[1].text, "Doc B");
  ASSERT_EQ(g.skills.size(), 1u);
  EXPECT_EQ(g.skills[0].id, "s");
}

TEST(OpenAiRequestTest, DefaultsFollowOpenAi) {
  Result<ServeRequest> r = Chat(R"({"messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->generate.max_new_tokens, kLimits.default_max_tokens);
  EXPECT_EQ(r->generate.temperature, 1.0f);
  EXPECT_EQ(r->generate.top_p, 1.0f);
}

TEST(OpenAiRequestTest, DeveloperRoleIsSystem) {
  Result<ServeRequest> r = Chat(R"({"messages": [{"role": "developer", "content": "x"},
                                                 {"role": "user", "content": "y"}]})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->generate.messages[0].role, "system");
}

TEST(OpenAiRequestTest, ToolsBecomeOneSkillBlock) {
  Result<ServeRequest> r = Chat(R"({"messages": [{"role": "user", "content": "weather?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object"}}},
              {"type": "function", "function": {"name": "get_time"}}]})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_EQ(r->generate.skills.size(), 1u);
  EXPECT_EQ(r->generate.skills[0].id, "tools");
  EXPECT_NE(r->generate.skills[0].text.find("<tools>"), std::string::npos);
  EXPECT_NE(r->generate.skills[0].text.find(R"("description":"Weather")"), std::string::npos);
  EXPECT_NE(r->generate.skills[0].text.find("get_time"), std::string::npos);
  EXPECT_EQ(r->tool_names, (std::vector<std::string>{"get_weather", "get_time"}));
  EXPECT_TRUE(r->generate.json_schema.empty());  // "auto"
  EXPECT_EQ(r->forced_tool, "");
}

// The function a reply must call, when the request fixes it: streamed calls use it to send
// arguments that come before the name.
TEST(OpenAiRequestTest, ToolChoiceNamingOrRequiringTheOnlyFunctionFixesIt) {
  const std::string two = R"("tools": [{"type": "function", "function": {"name": "f"}},
      {"type": "function", "function": {"name": "g"}}])";
  const std::string user = R"({"messages": [{"role": "user", "content": "x"}], )";
  Result<ServeRequest> named =
      Chat(user + two + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}}})");
  ASSERT_TRUE(named.ok()) << ErrorOf(named);
  EXPECT_EQ(named->forced_tool, "g");
  Result<ServeRequest> either = Chat(user + two + R"(, "tool_choice": "required"})");
  ASSERT_TRUE(either.ok()) << ErrorOf(either);
  EXPECT_EQ(either->forced_tool, "");
  Result<ServeRequest> only = Chat(user + R"("tools": [{"type": "function", "function": )" +
                                   R"({"name": "f"}}], "tool_choice": "required"})");
  ASSERT_TRUE(only.ok()) << ErrorOf(only);
  EXPECT_EQ(only->forced_tool, "f");
}

TEST(OpenAiRequestTest, ToolChoicesAndTheToolLoopsMessages) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
      "required": ["a"]}}}])";
  Result<ServeRequest> required = Chat(R"({"messages": [{"role": "user", "content": "x"}], )" +
                                       tools + R"(, "tool_choice": "required"})");
  ASSERT_TRUE(required.ok()) << ErrorOf(required);
  EXPECT_NE(required->generate.json_schema.find(R"("const":"f")"), std::string::npos);
  Result<ServeRequest> named = Chat(R"({"messages": [{"role": "user", "content": "x"}], )" + tools +
                                    R"(, "tool_choice": {"type": "function", "function": {"name": "g"}}})");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message().find("'g'"), std::string::npos);
  Result<ServeRequest> none = Chat(R"({"messages": [{"role": "user", "content": "x"}], )" + tools +
                                   R"(, "tool_choice": "none"})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->generate.skills.empty());
  EXPECT_TRUE(none->tool_names.empty());
  Result<ServeRequest> loop = Chat(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "2"}], )" + tools + "}");
  ASSERT_TRUE(loop.ok()) << ErrorOf(loop);
  ASSERT_EQ(loop->generate.messages.size(), 3u);
  EXPECT_EQ(loop->generate.messages[1].content,
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":1}}\n</tool_call>");
  EXPECT_EQ(loop->generate.messages[2].role, "user");
  EXPECT_EQ(loop->generate.messages[2].content, "<tool_response>\n2\n</tool_response>");
}

TEST(OpenAiRequestTest, RefusesBadBodies) {
  const struct {
    const char* body;
    const char* message_part;
  } cases[] = {
      {"", "not valid JSON"},
      {"{", "not valid JSON"},
      {"[1]", "JSON object"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", "not valid JSON"},
      {R"({})", "'messages' is required"},
      {R"({"messages": []})", "non-empty array"},
      {R"({"messages": "hi"})", "non-empty array"},
      {R"({"messages": [1]})", "messages[0]' must be an object"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role' must be a string"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "not supported"},
      {R"({"messages": [{"role": "user", "content": "x", "extra": 1}]})", "unrecognized argument 'extra'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "bogus": true})", "unrecognized argument 'bogus'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "'max_tokens' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "'max_tokens' must be >= 1"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999999999})", "'max_tokens' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "5"})", "must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "'temperature' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "must be a number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "'top_p' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 17})", "'n' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": 3})", "'stop'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]})", "at most 4"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [""]})", "empty string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 1})", "not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3})", "needs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "'top_logprobs' must be in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", "true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": {"text": "a"}})", "'documents' must be an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"id": "a"}]})", "documents[0].text"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"id": "a", "text": ""}]})", "must not be empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"text": "a", "url": "u"}]})", "unrecognized argument 'url'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"text": "a"}]})", "'documents[0].id' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"id": null, "text": "a"}]})", "'documents[0].id' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [{"id": 7, "text": "a"}]})", "'documents[0].id' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "skills": [{"id": "", "text": "a"}]})", "'skills[0].id' must not be empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": ""})", "'model' must be"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "code"}]})", "tools[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})", "response_format.type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "string", "pattern": "a"}}}})", "'pattern' is not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})", "json_schema.name"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 3})", "'model' must be a string"},
  };
  for (const auto& c : cases) {
    Result<ServeRequest> r = Chat(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(r.error().message().find(c.message_part), std::string::npos)
        << c.body << " -> " << r.error().message();
  }
}

TEST(OpenAiRequestTest, TooManyDocumentsAreRefused) {
  RequestLimits limits;
  limits.max_documents = 2;
  Result<ServeRequest> r = ParseChatCompletionRequest(
      R"({"messages": [{"role": "user", "content": "x"}],
          "documents": [{"id": "a", "text": "a"}, {"id": "b", "text": "b"}],
          "skills": [{"id": "c", "text": "c"}]})",
      limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("too many documents"), std::string::npos);
}

TEST(OpenAiRequestTest, DeepNestingIsRefusedWithoutCrashing) {
  std::string body = "{\"messages\": ";
  for (int i = 0; i < 100000; ++i) body += "[";
  for (int i = 0; i < 100000; ++i) body += "]";
  body += "}";
  Result<ServeRequest> r = Chat(body);
  EXPECT_FALSE(r.ok());
  // Where the parser used to follow client values: a message's content, a content part, a
  // tool's parameters and type.
  std::string objects;
  for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(200000, '}');
  const std::string arrays = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& deep : {
           R"({"messages": [{"role": "user", "content": )" + arrays + "}]}",
           R"({"messages": [{"role": "user", "content": [{"type": "text", "text": )" + objects +
               "}]}]}",
           R"({"messages": [{"role": )" + objects + "}]}",
           R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
               "function": {"name": "f", "parameters": )" + objects + "}}]}",
           R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": )" + arrays +
               "}]}",
       }) {
    Result<ServeRequest> refused = Chat(deep);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message().find("nested deeper than 64 levels"), std::string::npos)
        << refused.error().message();
  }
}

TEST(OpenAiRequestTest, NestingUpToTheLimitIsTaken) {
  RequestLimits limits;
  limits.max_json_depth = 8;
  // The body, tools, [0], function, parameters: 5 levels; 3 more inside the schema make 8.
  const std::string fits = R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type":
      "function", "function": {"name": "f", "parameters": {"a": {"b": [[]]}}}}]})";
  Result<ServeRequest> r = ParseChatCompletionRequest(fits, limits);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_NE(r->generate.skills[0].text.find(R"({"a":{"b":[[]]}})"), std::string::npos);
  const std::string deeper = R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type":
      "function", "function": {"name": "f", "parameters": {"a": {"b": [[[]]]}}}}]})";
  Result<ServeRequest> refused = ParseChatCompletionRequest(deeper, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("nested deeper than 8 levels"), std::string::npos);
}

TEST(OpenAiRequestTest, TinyTopPStaysPositive) {
  Result<ServeRequest> r =
      Chat(R"({"messages": [{"role": "user", "content": "x"}], "top_p": 1e-300})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_GT(r->generate.top_p, 0.0f);
}

TEST(OpenAiRequestTest, ParsesACompletionRequest) {
  Result<ServeRequest> r = ParseCompletionRequest(
      R"({"model": "m", "prompt": "Once upon a time", "max_tokens": 5,
          "documents": [{"id": "d", "text": "Doc"}]})",
      kLimits);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_FALSE(r->generate.chat);
  EXPECT_EQ(r->generate.prompt, "Once upon a time");
  EXPECT_EQ(r->generate.max_new_tokens, 5);
  EXPECT_EQ(r->generate.documents.size(), 1u);
  Result<ServeRequest> one = ParseCompletionRequest(R"({"prompt": ["x"]})", kLimits);
  ASSERT_TRUE(one.ok()) << ErrorOf(one);
  EXPECT_EQ(one->generate.prompt, "x");
}

TEST(OpenAiRequestTest, LogprobsEchoAndChoices) {
  Result<ServeRequest> chat = Chat(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 20,
          "n": 3})");
  ASSERT_TRUE(chat.ok()) << ErrorOf(chat);
  EXPECT_TRUE(chat->generate.return_logprobs);
  EXPECT_EQ(chat->generate.top_logprobs, 20);
  EXPECT_FALSE(chat->generate.return_prompt_logprobs);
  EXPECT_EQ(chat->generate.num_choices, 3);
  Result<ServeRequest> scored = ParseCompletionRequest(
      R"({"prompt": "x", "echo": true, "logprobs": 2, "max_tokens": 0})", kLimits);
  ASSERT_TRUE(scored.ok()) << ErrorOf(scored);
  EXPECT_TRUE(scored->echo);
  EXPECT_TRUE(scored->generate.return_logprobs);
  EXPECT_TRUE(scored->generate.return_prompt_logprobs);
  EXPECT_EQ(scored->generate.top_logprobs, 2);
  EXPECT_EQ(scored->generate.max_new_tokens, 0);
  Result<ServeRequest> plain = ParseCompletionRequest(R"({"prompt": "x", "logprobs": 0})", kLimits);
  ASSERT_TRUE(plain.ok()) << ErrorOf(plain);
  EXPECT_TRUE(plain->generate.return_logprobs);
  EXPECT_FALSE(plain->generate.return_prompt_logprobs);
}

TEST(OpenAiRequestTest, ResponseFormatsBecomeASchema) {
  Result<ServeRequest> text = Chat(
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text"}})");
  ASSERT_TRUE(text.ok()) << ErrorOf(text);
  EXPECT_TRUE(text->generate.json_schema.empty());
  Result<ServeRequest> object = Chat(
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(object.ok()) << ErrorOf(object);
  EXPECT_EQ(object->generate.json_schema, R"({"type":"object"})");
  Result<ServeRequest> schema = Chat(
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "p", "strict": true, "schema": {"type": "object",
          "properties": {"a": {"type": "integer"}}, "required": ["a"],
          "additionalProperties": false}}}})");
  ASSERT_TRUE(schema.ok()) << ErrorOf(schema);
  EXPECT_EQ(nlohmann::json::parse(schema->generate.json_schema)["required"][0], "a");
}

TEST(OpenAiRequestTest, RefusesBadCompletionRequests) {
  for (const char* body : {R"({})", R"({"prompt": 5})", R"({"prompt": [1, 2, 3]})",
                           R"({"prompt": ["a", "b"]})", R"({"prompt": "x", "max_tokens": 0})",
                           R"({"prompt": "x", "logprobs": 21})", R"({"prompt": "x", "logprobs": true})",
                           R"({"prompt": "x", "suffix": "y"})", R"({"prompt": "x", "best_of": 3})",
                           R"({"prompt": "x", "messages": []})"}) {
    Result<ServeRequest> r = ParseCompletionRequest(body, kLimits);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << body;
  }
}

}  // namespace
}  // namespace reprise::server
