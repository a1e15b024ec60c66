// The incremental reading of tool calls: replies cut into pieces at every byte give the calls
// and content that ParseToolCalls reads from the whole reply, the call's name is sent before
// its arguments end, and no markup is ever sent as content.
#include "server/tool_call_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace reprise::server {
namespace {

using nlohmann::json;
using Kind = ToolStreamEvent::Kind;

const std::vector<std::string> kNames = {"get_weather", "now"};

// What a client reassembles from the events: the content and each call's name and arguments.
struct Reassembled {
  std::string content;
  std::vector<ToolCall> calls;
};

Reassembled Reassemble(const std::vector<ToolStreamEvent>& events) {
  Reassembled out;
  for (const ToolStreamEvent& e : events) {
    if (e.kind == Kind::kContent) {
      out.content += e.text;
    } else if (e.kind == Kind::kCallStart) {
      EXPECT_EQ(e.call_index, static_cast<int>(out.calls.size()));
      EXPECT_TRUE(e.id.starts_with("call_")) << e.id;
      out.calls.push_back({e.id, e.name, ""});
    } else {
      EXPECT_EQ(e.call_index + 1, static_cast<int>(out.calls.size()));
      out.calls.back().arguments += e.text;
    }
  }
  return out;
}

// Streams `reply` in pieces of `size` bytes.
std::vector<ToolStreamEvent> StreamIn(std::string_view reply, size_t size, ToolCallStream& stream) {
  std::vector<ToolStreamEvent> events;
  for (size_t at = 0; at < reply.size(); at += size) stream.Feed(reply.substr(at, size), &events);
  stream.Finish(&events);
  return events;
}

// Every split gives what ParseToolCalls gives on the whole reply (arguments compared as JSON).
void ExpectSameAsWhole(std::string_view reply, const std::string& forced_name = "") {
  const ToolReply whole = ParseToolCalls(reply, kNames);
  for (size_t size = 1; size <= reply.size(); ++size) {
    SCOPED_TRACE("pieces of " + std::to_string(size) + " bytes: " + std::string(reply));
    ToolCallStream stream(kNames, forced_name);
    const Reassembled got = Reassemble(StreamIn(reply, size, stream));
    EXPECT_EQ(got.content, whole.content);
    EXPECT_EQ(stream.reply().content, whole.content);
    ASSERT_EQ(got.calls.size(), whole.calls.size());
    ASSERT_EQ(stream.reply().calls.size(), whole.calls.size());
    for (size_t c = 0; c < got.calls.size(); ++c) {
      EXPECT_EQ(got.calls[c].name, whole.calls[c].name);
      EXPECT_EQ(json::parse(got.calls[c].arguments), json::parse(whole.calls[c].arguments));
      EXPECT_EQ(stream.reply().calls[c].arguments, got.calls[c].arguments);
      EXPECT_EQ(stream.reply().calls[c].id, got.calls[c].id);
    }
    if (whole.content.find("<tool_call") == std::string::npos) {
      EXPECT_EQ(got.content.find("<tool_call"), std::string::npos);
    }
  }
}

TEST(ToolCallStreamTest, ReassemblesAsTheWholeReplyIsRead) {
  ExpectSameAsWhole(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris \\\"}\\\" {\", \"days\": [1, {\"a\": 2}]}}\n</tool_call>");
  ExpectSameAsWhole(
      "Let me look.\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n"
      "</tool_call>\n<tool_call>{\"name\":\"get_weather\",\"arguments\":"
      "{\"city\":\"Rome\"}}</tool_call>\n");
  // Llama 3.x: the whole reply one object, "parameters".
  ExpectSameAsWhole("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ExpectSameAsWhole("  \n{\"name\": \"now\", \"arguments\": {}}  ");
  ExpectSameAsWhole("A <tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call> B ");
  ExpectSameAsWhole("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\nDone.");
  // Keys in another order, arguments as a string: read whole at the end.
  ExpectSameAsWhole("<tool_call>{\"arguments\": {}, \"name\": \"now\"}</tool_call>");
  ExpectSameAsWhole("<tool_call>{\"name\": \"now\", \"arguments\": \"{}\"}</tool_call>");
  // Not calls: content, markup included.
  ExpectSameAsWhole("<tool_call>{\"name\": \"launch\", \"arguments\": {}}</tool_call> ok");
  ExpectSameAsWhole("<tool_call>not json</tool_call>");
  ExpectSameAsWhole("a < b and <tool_ c <tool_cal");
  ExpectSameAsWhole("{not a call}");
  ExpectSameAsWhole("plain text,\nwith lines.\n\n");
  ExpectSameAsWhole("");
  // The request fixes the function: its arguments may come first (a constrained reply).
  ExpectSameAsWhole(R"({"arguments": {"city": "}\"", "n": [1]}, "name": "get_weather"})",
                    "get_weather");
  ExpectSameAsWhole(R"({"name":"get_weather","arguments":{"days":2}})", "get_weather");
}

TEST(ToolCallStreamTest, ArgumentsBeforeTheNameStreamWhenTheFunctionIsFixed) {
  ToolCallStream stream(kNames, "get_weather");
  std::vector<ToolStreamEvent> events;
  stream.Feed(R"({"arguments":{"ci)", &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, Kind::kCallStart);
  EXPECT_EQ(events[0].name, "get_weather");
  EXPECT_EQ(events[1].text, R"({"ci)");
  events.clear();
  stream.Feed(R"(ty":"Oslo"},"name":"get_weather"})", &events);
  stream.Finish(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, R"(ty":"Oslo"})");
  EXPECT_EQ(stream.reply().content, "");
  // Without a fixed function the name must come first: such a call is read whole.
  ToolCallStream unfixed(kNames);
  events.clear();
  unfixed.Feed(R"({"arguments":{"ci)", &events);
  EXPECT_TRUE(events.empty());
}

TEST(ToolCallStreamTest, SendsTheNameFirstThenTheArgumentsAsTheyCome) {
  ToolCallStream stream(kNames);
  std::vector<ToolStreamEvent> events;
  stream.Feed("Checking.\n<tool_ca", &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Kind::kContent);
  EXPECT_EQ(events[0].text, "Checking.");  // the line end waits: a call may follow
  events.clear();
  stream.Feed("ll>\n{\"name\": \"get_weather\", \"arguments\": {\"ci", &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, Kind::kCallStart);
  EXPECT_EQ(events[0].name, "get_weather");
  EXPECT_EQ(events[0].call_index, 0);
  EXPECT_EQ(events[1].kind, Kind::kArguments);
  EXPECT_EQ(events[1].text, "{\"ci");
  events.clear();
  stream.Feed("ty\": \"Paris\"}", &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "ty\": \"Paris\"}");
  events.clear();
  stream.Feed("}\n</tool_call>", &events);
  stream.Finish(&events);
  EXPECT_TRUE(events.empty());
  ASSERT_EQ(stream.reply().calls.size(), 1u);
  EXPECT_EQ(stream.reply().calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(stream.reply().content, "Checking.");
}

TEST(ToolCallStreamTest, HoldsOnlyWhatMayBeACallsStart) {
  ToolCallStream stream(kNames);
  std::vector<ToolStreamEvent> events;
  stream.Feed("x <", &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "x");
  stream.Feed("b> y", &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].text, " <b> y");
  // An undeclared function's call is content, sent when the call ends.
  events.clear();
  stream.Feed(" <tool_call>{\"name\": \"rm\", \"arguments\": {}}", &events);
  EXPECT_TRUE(events.empty());
  stream.Feed("</tool_call>", &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, " <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>");
}

TEST(ToolCallStreamTest, ACallCutShortStaysTheCallItsPiecesBegan) {
  ToolCallStream stream(kNames);
  std::vector<ToolStreamEvent> events;
  stream.Feed("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa", &events);
  stream.Finish(&events);
  ASSERT_EQ(stream.reply().calls.size(), 1u);
  EXPECT_EQ(stream.reply().calls[0].arguments, "{\"city\": \"Pa");
  EXPECT_EQ(stream.reply().content, "");
}

}  // namespace
}  // namespace reprise::server
