// The request traces of `bench serve`: the builders on the real texts of ../shared/data
// (skipped when absent) and the chat history window on hand-made turns.
#include "workload/serve_trace.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "support/shared_data.h"
#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/skills_workload.h"
#include "workload/test_word_count.h"

namespace reprise::workload {
namespace {

using test_util::CountWords;

std::string DataDirOf(const std::string& file, std::string_view relative) {
  return file.substr(0, file.size() - relative.size());
}

ServeTraceOptions Options(const std::string& data_dir, int num_requests) {
  ServeTraceOptions options;
  options.data_dir = data_dir;
  options.num_requests = num_requests;
  options.count_tokens = CountWords;
  return options;
}

void ExpectSameTrace(const ServeTrace& a, const ServeTrace& b) {
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const TraceRequest& x = a.requests[i];
    const TraceRequest& y = b.requests[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.system, y.system);
    EXPECT_EQ(x.user, y.user);
    ASSERT_EQ(x.documents.size(), y.documents.size());
    for (size_t d = 0; d < x.documents.size(); ++d) EXPECT_EQ(x.documents[d].id, y.documents[d].id);
    ASSERT_EQ(x.skills.size(), y.skills.size());
    for (size_t s = 0; s < x.skills.size(); ++s) EXPECT_EQ(x.skills[s].id, y.skills[s].id);
  }
}

TEST(ServeTraceTest, ParsesTheTraceNames) {
  ASSERT_EQ(ServeTraceNames().size(), 5u);
  for (std::string_view name : ServeTraceNames()) EXPECT_TRUE(ParseServeTraceKind(name).ok());
  EXPECT_EQ(*ParseServeTraceKind("chat-session"), ServeTraceKind::kChatSession);
  Result<ServeTraceKind> bad = ParseServeTraceKind("chat");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("chat-session"), std::string::npos);
}

TEST(ServeTraceTest, EstimatesFourTokensPerThreeWords) {
  EXPECT_EQ(EstimateTokens(""), 0);
  EXPECT_EQ(EstimateTokens("  \n "), 0);
  EXPECT_EQ(EstimateTokens("one"), 2);  // rounded up
  EXPECT_EQ(EstimateTokens("one two three"), 4);
  EXPECT_EQ(EstimateTokens("a b c d e f"), 8);
}

TEST(ServeTraceTest, DocQaIndexesEachDocumentOnceThenAsksWithRetrievedDocuments) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotFullwikiFile));
  ServeTraceOptions options = Options(DataDirOf(file, kHotpotFullwikiFile), 30);
  Result<ServeTrace> trace = BuildServeTrace(ServeTraceKind::kDocQa, options);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  EXPECT_EQ(trace->name, "docqa");

  std::map<std::string, std::string> indexed;  // id -> text
  int num_queries = 0;
  std::map<std::string, int> uses;  // document id -> questions that retrieved it
  for (const TraceRequest& request : trace->requests) {
    EXPECT_EQ(request.system, kDocQaSystemPrompt);
    EXPECT_TRUE(request.conversation_id.empty());
    EXPECT_TRUE(request.skills.empty());
    if (request.phase == kPhaseIndex) {
      EXPECT_EQ(num_queries, 0) << "index requests come first";
      ASSERT_EQ(request.documents.size(), 1u);
      EXPECT_EQ(request.max_tokens, 1);
      EXPECT_TRUE(indexed.emplace(request.documents[0].id, request.documents[0].text).second)
          << "indexed twice: " << request.documents[0].id;
      continue;
    }
    ASSERT_EQ(request.phase, kPhaseQuery);
    ++num_queries;
    EXPECT_TRUE(request.user.starts_with("Question: ")) << request.user;
    EXPECT_EQ(request.max_tokens, 0);
    EXPECT_GE(request.documents.size(), 1u);
    EXPECT_LE(request.documents.size(), 4u);
    for (const TraceText& document : request.documents) {
      auto it = indexed.find(document.id);
      ASSERT_NE(it, indexed.end()) << "never indexed: " << document.id;
      EXPECT_EQ(it->second, document.text);
      ++uses[document.id];
    }
  }
  EXPECT_EQ(num_queries, 30);
  // Some documents serve several questions: the reuse the trace is there to measure.
  int num_recurring = 0;
  for (const auto& [id, count] : uses) num_recurring += count > 1;
  EXPECT_GT(num_recurring, 0);
  EXPECT_EQ(uses.size(), indexed.size());

  Result<ServeTrace> again = BuildServeTrace(ServeTraceKind::kDocQa, options);
  ASSERT_TRUE(again.ok());
  ExpectSameTrace(*trace, *again);
}

TEST(ServeTraceTest, DocQaKeepsPromptsWithinTheBudget) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotFullwikiFile));
  ServeTraceOptions options = Options(DataDirOf(file, kHotpotFullwikiFile), 10);
  options.max_prompt_tokens = 150;
  options.chunk_tokens = 64;
  Result<ServeTrace> trace = BuildServeTrace(ServeTraceKind::kDocQa, options);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  for (const TraceRequest& request : trace->requests) {
    if (request.phase != kPhaseQuery) continue;
    int total = CountWords(request.system) + CountWords(request.user);
    for (const TraceText& document : request.documents) total += CountWords(document.text);
    EXPECT_LE(total, 150) << request.id;
  }
}

TEST(ServeTraceTest, DocQaShuffledSendsTheSameDocumentsInNewOrdersWithoutAnIndexPhase) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotDistractorFile));
  Result<ServeTrace> trace = BuildServeTrace(
      ServeTraceKind::kDocQaShuffled, Options(DataDirOf(file, kHotpotDistractorFile), 8));
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  EXPECT_EQ(trace->name, "docqa-shuffled");
  ASSERT_EQ(trace->requests.size(), 8u);
  std::set<std::string> documents;
  std::set<std::vector<std::string>> orders;
  for (const TraceRequest& request : trace->requests) {
    EXPECT_EQ(request.phase, kPhaseQuery);
    ASSERT_EQ(request.documents.size(), 6u);
    std::vector<std::string> order;
    for (const TraceText& d : request.documents) {
      documents.insert(d.id);
      order.push_back(d.id);
    }
    orders.insert(order);
  }
  EXPECT_LE(documents.size(), 12u);
  EXPECT_EQ(orders.size(), 8u);
}

// The speaker of each line of a message ("[Session ...]" header lines skipped).
std::set<std::string> SpeakersOf(const std::string& message) {
  std::set<std::string> speakers;
  size_t begin = 0;
  while (begin < message.size()) {
    size_t end = message.find('\n', begin);
    if (end == std::string::npos) end = message.size();
    const std::string line = message.substr(begin, end - begin);
    if (!line.starts_with("[Session ")) speakers.insert(line.substr(0, line.find(": ")));
    begin = end + 1;
  }
  return speakers;
}

// The first speaker's turns are the requests, the other's are their replies, from the data:
// every server is sent the same history.
TEST(ServeTraceTest, ChatSessionReplaysTheDatasetsTurnsAndReplies) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kLocomoFile));
  Result<ServeTrace> trace =
      BuildServeTrace(ServeTraceKind::kChatSession, Options(DataDirOf(file, kLocomoFile), 20));
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  ASSERT_EQ(trace->requests.size(), 20u);
  for (const TraceRequest& request : trace->requests) {
    EXPECT_EQ(request.phase, kPhaseQuery);
    EXPECT_EQ(request.conversation_id, trace->requests[0].conversation_id);
    EXPECT_EQ(request.system, trace->requests[0].system);
    EXPECT_TRUE(request.documents.empty());
    EXPECT_EQ(SpeakersOf(request.user), std::set<std::string>{"Caroline"}) << request.id;
    ASSERT_TRUE(request.reply.has_value()) << request.id;
    EXPECT_EQ(SpeakersOf(*request.reply), std::set<std::string>{"Melanie"}) << request.id;
  }
  EXPECT_TRUE(trace->requests[0].user.starts_with("[Session 1, "));
  EXPECT_NE(trace->requests[0].user.find("\nCaroline: Hey Mel!"), std::string::npos);
  EXPECT_TRUE(trace->requests[0].reply->starts_with("Melanie: "));
  EXPECT_EQ(trace->requests[0].id, "chat:conv-26:s1:t0");
  EXPECT_EQ(trace->requests[1].id, "chat:conv-26:s1:t2");

  // Replayed through a window, the history holds the data's replies, not the server's.
  ChatWindow window(0, CountWords);
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<TraceMessage> messages = window.Messages(trace->requests[i]);
    ASSERT_EQ(messages.size(), 2 + 2 * i);
    if (i > 0) {
      EXPECT_EQ(messages[messages.size() - 2].content, *trace->requests[i - 1].reply);
    }
    window.AddReply(trace->requests[i], "what the server said");
  }
}

// Turns of one conversation, each 10 words, with 10-word replies.
TraceRequest Turn(const std::string& conversation, int index) {
  TraceRequest request;
  request.id = conversation + ":" + std::to_string(index);
  request.phase = kPhaseQuery;
  request.system = "system prompt";  // 2 words
  request.conversation_id = conversation;
  request.user = "turn" + std::to_string(index) + " a b c d e f g h i";
  return request;
}

TEST(ChatWindowTest, HistoryGrowsWithTurnsAndReplies) {
  ChatWindow window(0, CountWords);
  for (int i = 0; i < 3; ++i) {
    const TraceRequest turn = Turn("c", i);
    std::vector<TraceMessage> messages = window.Messages(turn);
    ASSERT_EQ(messages.size(), static_cast<size_t>(2 + 2 * i));
    EXPECT_EQ(messages.front().role, "system");
    EXPECT_EQ(messages.back().role, "user");
    EXPECT_EQ(messages.back().content, turn.user);
    if (i > 0) {
      EXPECT_EQ(messages[1].content, Turn("c", 0).user);
      EXPECT_EQ(messages[messages.size() - 2].role, "assistant");
      EXPECT_EQ(messages[messages.size() - 2].content, "reply " + std::to_string(i - 1));
    }
    window.AddReply(turn, "reply " + std::to_string(i));
  }
  EXPECT_EQ(window.num_dropped_messages(), 0);
}

TEST(ChatWindowTest, DropsTheOldestExchangesPastTheBudget) {
  // system 2 + user 10 + each exchange 10 + 2 ("reply N") = 12: a budget of 40 holds two.
  ChatWindow window(40, CountWords);
  for (int i = 0; i < 8; ++i) {
    const TraceRequest turn = Turn("c", i);
    std::vector<TraceMessage> messages = window.Messages(turn);
    int total = 0;
    for (const TraceMessage& message : messages) total += CountWords(message.content);
    EXPECT_LE(total, 40) << "turn " << i;
    const int kept = std::min(i, 2);
    ASSERT_EQ(messages.size(), static_cast<size_t>(2 + 2 * kept)) << "turn " << i;
    if (kept > 0) {
      // The window holds the newest exchanges, starting with a user turn.
      EXPECT_EQ(messages[1].role, "user");
      EXPECT_EQ(messages[1].content, Turn("c", i - kept).user);
      EXPECT_EQ(messages[messages.size() - 2].content, "reply " + std::to_string(i - 1));
    }
    window.AddReply(turn, "reply " + std::to_string(i));
  }
  EXPECT_EQ(window.num_dropped_messages(), 2 * (8 - 1 - 2));
}

TEST(ChatWindowTest, NewConversationStartsEmptyAndStandaloneRequestsPassThrough) {
  ChatWindow window(0, CountWords);
  window.Messages(Turn("a", 0));
  window.AddReply(Turn("a", 0), "reply");
  EXPECT_EQ(window.Messages(Turn("b", 0)).size(), 2u);

  TraceRequest standalone;
  standalone.system = "s";
  standalone.user = "q";
  std::vector<TraceMessage> messages = window.Messages(standalone);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].content, "q");
  window.AddReply(standalone, "ignored");
  EXPECT_EQ(window.num_history_messages(), 0);
}

TEST(ServeTraceTest, ChatSessionWindowDropsTheOldestRealTurns) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kLocomoFile));
  Result<ServeTrace> trace =
      BuildServeTrace(ServeTraceKind::kChatSession, Options(DataDirOf(file, kLocomoFile), 60));
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  ChatWindow window(300, CountWords);
  for (const TraceRequest& request : trace->requests) {
    std::vector<TraceMessage> messages = window.Messages(request);
    int total = 0;
    for (const TraceMessage& message : messages) total += CountWords(message.content);
    EXPECT_LE(total, 300) << request.id;
    window.AddReply(request, "Sounds great, tell me more!");
  }
  EXPECT_GT(window.num_dropped_messages(), 0);
}

TEST(ServeTraceTest, AgentSkillsRecurZipfLikeAndDependOnTheSeed) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  ServeTraceOptions options = Options(DataDirOf(file, kSkillsBenchFile), 60);
  options.seed = 7;
  Result<ServeTrace> trace = BuildServeTrace(ServeTraceKind::kAgent, options);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  ASSERT_EQ(trace->requests.size(), 60u);
  std::map<std::string, int> uses;
  for (const TraceRequest& request : trace->requests) {
    EXPECT_EQ(request.system, trace->requests[0].system);
    EXPECT_TRUE(request.system.starts_with("Available skills:\n"));
    EXPECT_TRUE(request.user.starts_with("Task:\n"));
    ASSERT_GE(request.skills.size(), 1u);
    ASSERT_LE(request.skills.size(), 3u);
    std::set<std::string> ids;
    for (const TraceText& skill : request.skills) {
      EXPECT_TRUE(ids.insert(skill.id).second) << "a skill loaded twice in " << request.id;
      EXPECT_TRUE(skill.text.starts_with("Skill: ")) << skill.id;
      ++uses[skill.id];
    }
  }
  // Zipf with s = 1 over ~120 skills: the most popular one is drawn in about a fifth of the
  // draws; uniform draws would give it ~1%.
  int most = 0;
  for (const auto& [id, count] : uses) most = std::max(most, count);
  EXPECT_GE(most, 8);
  int num_recurring = 0;
  for (const auto& [id, count] : uses) num_recurring += count > 1;
  EXPECT_GE(num_recurring, 5);

  Result<ServeTrace> same = BuildServeTrace(ServeTraceKind::kAgent, options);
  ASSERT_TRUE(same.ok());
  ExpectSameTrace(*trace, *same);
  options.seed = 8;
  Result<ServeTrace> other = BuildServeTrace(ServeTraceKind::kAgent, options);
  ASSERT_TRUE(other.ok());
  bool differs = false;
  for (size_t i = 0; i < other->requests.size() && !differs; ++i) {
    differs = other->requests[i].skills[0].id != trace->requests[i].skills[0].id;
  }
  EXPECT_TRUE(differs);
}

TEST(ServeTraceTest, RejectsBadOptions) {
  ServeTraceOptions options;
  EXPECT_FALSE(BuildServeTrace(ServeTraceKind::kDocQa, options).ok());  // no count_tokens
  options.count_tokens = CountWords;
  options.num_requests = -1;
  Result<ServeTrace> trace = BuildServeTrace(ServeTraceKind::kAgent, options);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::workload
