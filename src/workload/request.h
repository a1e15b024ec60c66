// The data model of a benchmark workload: a request is a prompt made of named segments.
//
// The workload builders (docqa_workload.h, chat_workload.h, skills_workload.h) turn real texts
// into sequences of requests whose prompts reuse earlier content; the engine's `bench reuse`
// runs them. A segment is the unit the engine can recognise again: the system prompt, one
// retrieved document chunk, one chunk of chat history, one skill text, the question. Its
// `source_id` names the content so that a later request carrying the same text can be
// matched without comparing texts (equal ids always mean equal texts within one workload).
//
// Segment texts are meant to be concatenated verbatim, in order, to give the prompt: every
// segment but the last ends with a newline. The engine may instead tokenize each segment on
// its own (chunk reuse needs stable token ids per segment); both readings are intended.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace reprise::workload {

// Segment roles, in the order they appear in a prompt.
inline constexpr std::string_view kRoleSystem = "system";
inline constexpr std::string_view kRoleDocument = "document";  // a retrieved document chunk
inline constexpr std::string_view kRoleTurn = "turn";          // a chunk of chat history
inline constexpr std::string_view kRoleSkill = "skill";        // (a piece of) a SKILL.md text
inline constexpr std::string_view kRoleQuestion = "question";  // the question or task; last

struct Segment {
  std::string role;  // one of the kRole* values
  std::string text;
  // Stable id of the content, e.g. "hotpot:<title>#<chunk>", "locomo:<conv>:<chunk>",
  // "skill:<key>#<piece>", "system:docqa"; empty for the question.
  std::string source_id;
};

struct Request {
  std::string id;  // unique within the workload, e.g. "docqa:<item id>"
  std::vector<Segment> segments;
  std::string reference_answer;  // the data set's answer; empty when it has none
  // "-plain" workloads (named_workload.h): the context segments pasted into the question, as
  // they were (what a benchmark that pre-caches a request's documents warms).
  std::vector<Segment> pasted;
};

// Counts the tokens of a text. The engine passes its tokenizer; tests pass a word counter.
// Must be deterministic. The layer never assumes it is additive over concatenation.
using CountTokensFn = std::function<int(std::string_view)>;

// True for the roles that hold retrieved or selected context (document, turn, skill).
bool IsContextRole(std::string_view role);

// The segment texts concatenated in order: the prompt as one string.
std::string PromptText(const Request& request);

// The sum of count_tokens over the segment texts (what the max_prompt_tokens guard bounds).
int64_t CountPromptTokens(const Request& request, const CountTokensFn& count_tokens);

}  // namespace reprise::workload
