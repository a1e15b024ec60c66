// Request traces for `reprise bench serve`: the real texts of the workloads (HotpotQA, LoCoMo,
// SkillsBench) as a sequence of chat requests that an HTTP client replays against a server.
//
// This file holds pure data: what each request says (system message, documents, skills, the
// user message) and, for chat sessions, the history window a chat app would send. The HTTP
// client that turns a TraceRequest into an OpenAI-style request body lives in cli/.
//
// Traces:
//   docqa         the HotpotQA docqa workload (docqa_workload.h: BM25 top-k chunks of the whole
//                 collection, best first). First the "index" phase: every document the chosen
//                 questions retrieve, each sent once in a request of its own (in order of first
//                 retrieval) so that a server that caches segments holds its KV; then the
//                 "query" phase: each question with its retrieved documents in retrieval order.
//                 Questions that share a retrieved document come first, grouped (related
//                 questions of one user), then the others in file order.
//   chat-session  LoCoMo conversations replayed as a chat (file order, then session order):
//                 the conversation's first speaker is the user, the other one the assistant;
//                 each user message (a turn "<speaker>: <text>", or several of the same
//                 speaker in a row, one per line) is a request, and the dataset's answer to it
//                 (the other speaker's next turns) is its `reply`, which ChatWindow records as
//                 the assistant message whatever the server said — so every server gets the
//                 same prompts. The history grows with both; past the prompt budget the
//                 oldest exchanges are dropped, as chat apps do, and everything after the cut
//                 moves.
//   agent         SkillsBench: a fixed skill catalogue as the system message, then per task
//                 the full text of the skills it loads and its instruction. The skills are
//                 drawn Zipf-like (P(rank r) ~ 1/r^s over a seeded ranking of the catalogue)
//                 so that popular skills recur, as an agent's would; as many as the task
//                 ships with, at least 1 and at most max_skills_per_task.
//   docqa-shuffled  the docqa-shuffled workload (docqa_workload.h): 6 of the same 12 HotpotQA
//                 paragraphs per question, in a new order each time, and no index phase —
//                 with `--documents inline` the plain-text trace of issue 17, where documents
//                 are seen only inside earlier prompts.
//   agent-tools   SkillsBench as an agent's tool loop (workload/agent_tool_trace.h): the skill
//                 catalogue as OpenAI tools (the same for every request), then per task one
//                 request per step, each the task plus a transcript that grows by an assistant
//                 tool call and its `tool` result (the skill's text) per step.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "workload/request.h"

namespace reprise::workload {

enum class ServeTraceKind { kDocQa, kChatSession, kAgent, kDocQaShuffled, kAgentTools };

// "docqa", "chat-session", "agent", "docqa-shuffled", "agent-tools", in that order.
std::span<const std::string_view> ServeTraceNames();

// Errors: InvalidArgument for an unknown name (listing the known ones).
Result<ServeTraceKind> ParseServeTraceKind(std::string_view name);

inline constexpr std::string_view kPhaseIndex = "index";  // docqa: a document sent to be cached
inline constexpr std::string_view kPhaseQuery = "query";  // a question, turn or task

inline constexpr std::string_view kChatSessionSystemPrompt =
    "You are a friendly participant in a chat. Each message holds turns of the conversation, "
    "one a line, each starting with the speaker's name. Reply briefly.\n";
inline constexpr std::string_view kDocQaIndexUserMessage = "Read the document.";

struct ServeTraceOptions {
  std::string data_dir;  // the folder that holds workloads/
  // Queries (docqa questions, chat turns, agent tasks) in the trace; the docqa index requests
  // come on top. 0 = all the data holds (agent: one round over the tasks).
  int num_requests = 10;
  // The prompt (system + context + user, by count_tokens) must stay within this: docqa and
  // agent drop their lowest-ranked documents / last skills, chat-session the oldest history
  // (ChatWindow). 0 = no limit.
  int max_prompt_tokens = 0;
  int top_documents = 4;  // docqa: retrieved chunks per question
  int chunk_tokens = 256;  // docqa: a document chunk holds at most this many tokens
  int max_skills_per_task = 3;        // agent
  double skill_zipf_exponent = 1.0;   // agent: s in 1/r^s
  int max_catalog_skills = 0;         // agent: skills listed and drawn from (0 = all)
  int max_tool_result_tokens = 256;   // agent-tools: a tool result (skill text) is cut to this
  uint64_t seed = 0;                  // agent: the ranking and the draws
  CountTokensFn count_tokens;         // required
};

// A document or skill: reusable text with a stable id (equal ids mean equal texts).
struct TraceText {
  std::string id;
  std::string text;
};

// agent-tools: a function offered to the model (OpenAI's `tools`); its parameters are
// kAgentToolParameters, the same for every tool.
struct TraceTool {
  std::string name;  // [A-Za-z0-9_-]{1,64}, as OpenAI requires
  std::string description;
};

// One call an assistant message made.
struct TraceToolCall {
  std::string id;         // unique within the trace; the `tool` message answering it names it
  std::string name;       // a TraceTool's
  std::string arguments;  // a JSON object, as text
};

// The JSON Schema of every agent-tools function's arguments.
inline constexpr std::string_view kAgentToolParameters =
    R"({"type":"object","properties":{"request":{"type":"string","description":"what the )"
    R"(task needs from this skill"}},"required":["request"]})";

struct TraceMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::vector<TraceToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;               // tool: the call this is the result of
};

struct TraceRequest {
  std::string id;     // unique within the trace
  std::string phase;  // kPhaseIndex or kPhaseQuery
  std::string system;
  std::vector<TraceText> documents;  // docqa, in retrieval order
  std::vector<TraceText> skills;     // agent, in load order
  std::string user;                  // the new user message
  // chat-session: the conversation this turn continues (ChatWindow keeps its history); ""
  // for a standalone request.
  std::string conversation_id;
  int max_tokens = 0;  // > 0: generate at most this many (index requests); 0 = the client's
  // chat-session: the dataset's answer to this message, recorded in the history instead of
  // the server's reply (so that each server is sent the same prompts); nullopt = the server's
  // reply is recorded.
  std::optional<std::string> reply;
  // agent-tools: the functions offered (the same list for every request of the trace), and
  // the messages after `user`: assistant tool calls, each followed by its `tool` result.
  std::vector<TraceTool> tools;
  std::vector<TraceMessage> transcript;
};

struct ServeTrace {
  std::string name;  // as in ServeTraceNames
  std::vector<TraceRequest> requests;
};

// Builds a trace from the data under options.data_dir; deterministic for given options.
// Errors: InvalidArgument (options), and the workload builders' NotFound / IoError / Corrupt.
Result<ServeTrace> BuildServeTrace(ServeTraceKind kind, const ServeTraceOptions& options);

// A client-side token estimate for servers whose tokenizer the client lacks: 4 tokens per 3
// whitespace-separated words, rounded up (English BPE vocabularies average about 0.75 words
// per token). Only budgets depend on it; the report gives the server's own counts.
int EstimateTokens(std::string_view text);

// The history window of a chat app: the messages sent for each request of a trace.
// A request without conversation_id gets [system, user, transcript...]. A chat-session turn
// gets [system, history..., user], where the history holds the earlier turns of its conversation
// and the replies recorded for them, oldest exchanges (a user turn and its reply) dropped until the
// estimate fits max_prompt_tokens; a new conversation_id starts an empty history.
// Thread-compatible.
class ChatWindow {
 public:
  // max_prompt_tokens: 0 = keep everything. Requires: count_tokens set.
  ChatWindow(int max_prompt_tokens, CountTokensFn count_tokens);

  // The messages to send for `request` (drops history as needed; the drop is permanent).
  std::vector<TraceMessage> Messages(const TraceRequest& request);

  // Records `request`'s user turn and its reply as the newest exchange: request.reply when
  // the trace gives one, else `server_reply`. Call after Messages(request). No-op for a
  // request without conversation_id.
  void AddReply(const TraceRequest& request, std::string server_reply);

  int num_history_messages() const { return static_cast<int>(history_.size()); }
  // Messages dropped from the front since construction (over all conversations).
  int num_dropped_messages() const { return num_dropped_messages_; }

 private:
  int max_prompt_tokens_;
  CountTokensFn count_tokens_;
  std::string conversation_id_;
  std::deque<TraceMessage> history_;  // alternating user, assistant; starts with a user turn
  int num_dropped_messages_ = 0;
};

}  // namespace reprise::workload
