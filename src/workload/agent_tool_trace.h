// The agent-tools trace of `reprise bench serve` (serve_trace.h): SkillsBench tasks replayed
// as the requests an agent's tool loop sends, step by step.
//
//   tools       one function per skill of the catalogue, named after its key (characters
//               outside [A-Za-z0-9_-] become '_'), described by its SKILL.md description,
//               arguments kAgentToolParameters; the same list, in key order, for every request
//               of the trace. The catalogue holds every skill of the chosen tasks, topped up
//               with the file's other skills (key order) to max_catalog_skills (0: none added).
//   a task      the tasks with at least one kept skill, in file order; each makes 1 + k steps,
//               k = min(its skills, max_skills_per_task). Step 1 is [system, instruction];
//               step j + 1 adds, after step j's messages, an assistant message calling the
//               task's j-th skill (id "call_<task>_<j>", arguments {"request": <the
//               instruction's first line, at most 24 words>}) and the `tool` message answering
//               it with that skill's SKILL.md, cut to max_tool_result_tokens. So the prompt of
//               each step is the previous one's plus one exchange: what an agent sends.
//   phases      "step <n>": the comparison of servers (CompareServeRuns) is then per step.
//   the reply   scripted (the transcript is the trace's, whatever a server answered), so every
//               server is sent the same prompts.
// num_requests counts steps (0 = every task): the first tasks that make that many; then a
// task's steps whose estimate passes max_prompt_tokens are left out (a task whose first step
// does not fit is skipped), so the trace may hold fewer.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "workload/serve_trace.h"

namespace reprise::workload {

inline constexpr std::string_view kAgentToolsSystemPrompt =
    "You are an agent that completes the user's task with the tools provided. Call a skill's "
    "tool to read its instructions before you rely on it; reply with the result when the task "
    "is done.";

// Errors: InvalidArgument (options; nothing fits max_prompt_tokens), and the skills file's
// NotFound / IoError / Corrupt.
Result<ServeTrace> BuildAgentToolTrace(const ServeTraceOptions& options);

// `name` as an OpenAI function name: characters outside [A-Za-z0-9_-] become '_', at most 64.
std::string ToolNameOf(std::string_view name);

// The longest start of `text` (cut before a word) whose count_tokens is at most max_tokens.
std::string CutToTokens(std::string_view text, int max_tokens, const CountTokensFn& count_tokens);

}  // namespace reprise::workload
