#include "workload/agent_tool_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "workload/json_input.h"
#include "workload/skills_workload.h"
#include "workload/workload.h"

namespace reprise::workload {
namespace {

struct AgentSkill {
  std::string description;  // "" when null
  std::string text;         // SKILL.md
};

struct AgentTask {
  std::string id;
  std::string instruction;
  std::vector<std::string> skill_keys;  // kept skills, in the task's order
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The instruction's first non-empty line, at most 24 words: what the agent asks a skill for.
std::string RequestOf(std::string_view instruction) {
  std::string line;
  while (!instruction.empty()) {
    const size_t end = instruction.find('\n');
    line = std::string(instruction.substr(0, end));
    if (line.find_first_not_of(" \t\r") != std::string::npos) break;
    instruction = end == std::string_view::npos ? std::string_view() : instruction.substr(end + 1);
  }
  std::string out;
  int words = 0;
  size_t i = 0;
  while (i < line.size() && words < 24) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    if (i == line.size()) break;
    size_t j = i;
    while (j < line.size() && !IsSpace(line[j])) ++j;
    if (!out.empty()) out += ' ';
    out += line.substr(i, j - i);
    ++words;
    i = j;
  }
  return out;
}

// The tools' share of a prompt, estimated: each function's name, description and parameters.
int64_t ToolsTokens(const std::vector<TraceTool>& tools, const CountTokensFn& count_tokens) {
  int64_t total = 0;
  for (const TraceTool& tool : tools) {
    total += count_tokens(tool.name) + count_tokens(tool.description) +
             count_tokens(kAgentToolParameters);
  }
  return total;
}

}  // namespace

std::string ToolNameOf(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 64)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

std::string CutToTokens(std::string_view text, int max_tokens, const CountTokensFn& count_tokens) {
  if (count_tokens(text) <= max_tokens) return std::string(text);
  // Word ends; the longest prefix ending at one that fits (the count grows with the prefix).
  std::vector<size_t> ends;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsSpace(text[i]) && (i + 1 == text.size() || IsSpace(text[i + 1]))) ends.push_back(i + 1);
  }
  size_t lo = 0, hi = ends.size();  // ends[0, lo) fit; ends[hi, ...) do not
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (count_tokens(text.substr(0, ends[mid])) <= max_tokens) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? std::string() : std::string(text.substr(0, ends[lo - 1]));
}

Result<ServeTrace> BuildAgentToolTrace(const ServeTraceOptions& options) {
  if (options.max_tool_result_tokens < 1) {
    return InvalidArgumentError("agent-tools trace: max_tool_result_tokens must be >= 1, got " +
                                std::to_string(options.max_tool_result_tokens));
  }
  if (options.max_catalog_skills < 0) {
    return InvalidArgumentError("agent-tools trace: max_catalog_skills must be >= 0, got " +
                                std::to_string(options.max_catalog_skills));
  }
  WorkloadOptions common;
  common.data_dir = options.data_dir;
  const std::string path = ResolveDataPath(common, kSkillsBenchFile);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json root, ReadJsonFile(path));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* skills_json,
                           JsonObjectField(root, "skills", path));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* tasks_json, JsonArrayField(root, "tasks", path));

  std::map<std::string, AgentSkill> skills;  // by key: the tools' order
  for (auto it = skills_json->begin(); it != skills_json->end(); ++it) {
    const std::string what = path + ": skill '" + it.key() + "'";
    AgentSkill skill;
    REPRISE_ASSIGN_OR_RETURN(skill.text, JsonStringField(*it, "text", what));
    if (it->contains("description") && !(*it)["description"].is_null()) {
      REPRISE_ASSIGN_OR_RETURN(skill.description, JsonStringField(*it, "description", what));
    } else {
      REPRISE_ASSIGN_OR_RETURN(skill.description, JsonStringField(*it, "name", what));
    }
    skills.emplace(it.key(), std::move(skill));
  }
  std::vector<AgentTask> tasks;
  for (size_t t = 0; t < tasks_json->size(); ++t) {
    const nlohmann::json& value = (*tasks_json)[t];
    const std::string what = path + ": task " + std::to_string(t);
    AgentTask task;
    REPRISE_ASSIGN_OR_RETURN(task.id, JsonStringField(value, "task_id", what));
    REPRISE_ASSIGN_OR_RETURN(task.instruction, JsonStringField(value, "instruction", what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* keys, JsonArrayField(value, "skills", what));
    for (const nlohmann::json& key : *keys) {
      if (!key.is_string() || !skills.contains(key.get<std::string>())) {
        return CorruptError(what + ": a skill key that is not one of the file's skills");
      }
      task.skill_keys.push_back(key.get<std::string>());
    }
    if (!task.skill_keys.empty()) tasks.push_back(std::move(task));
  }
  if (tasks.empty()) return CorruptError(path + ": no task has a kept skill");

  // The tasks the steps come from, and the catalogue: their skills, topped up.
  const size_t wanted_steps =
      options.num_requests > 0 ? static_cast<size_t>(options.num_requests) : SIZE_MAX;
  const auto steps_of = [&options](const AgentTask& task) {
    return 1 + std::min<size_t>(task.skill_keys.size(),
                                static_cast<size_t>(options.max_skills_per_task));
  };
  std::set<std::string> catalogue;
  size_t planned = 0;
  size_t num_chosen = 0;
  for (const AgentTask& task : tasks) {
    if (planned >= wanted_steps) break;
    planned += steps_of(task);
    ++num_chosen;
    for (const std::string& key : task.skill_keys) catalogue.insert(key);
  }
  tasks.resize(num_chosen);  // steps left out by the budget are not made up by other tasks
  for (const auto& [key, skill] : skills) {
    if (static_cast<int>(catalogue.size()) >= options.max_catalog_skills) break;
    catalogue.insert(key);
  }
  std::vector<TraceTool> tools;
  for (const std::string& key : catalogue) {
    tools.push_back({ToolNameOf(key), skills.at(key).description});
  }
  const int64_t tools_tokens = ToolsTokens(tools, options.count_tokens);
  const int64_t system_tokens = options.count_tokens(kAgentToolsSystemPrompt);

  ServeTrace trace{"agent-tools", {}};
  for (const AgentTask& task : tasks) {
    if (trace.requests.size() >= wanted_steps) break;
    TraceRequest step;
    step.system = std::string(kAgentToolsSystemPrompt);
    step.user = task.instruction;
    step.tools = tools;
    int64_t tokens = system_tokens + tools_tokens + options.count_tokens(step.user);
    const size_t num_steps = steps_of(task);
    const std::string arguments = nlohmann::json{{"request", RequestOf(task.instruction)}}.dump();
    for (size_t s = 0; s < num_steps && trace.requests.size() < wanted_steps; ++s) {
      if (s > 0) {
        const std::string& key = task.skill_keys[s - 1];
        TraceMessage call{"assistant", "", {}, ""};
        const std::string id = "call_" + ToolNameOf(task.id) + "_" + std::to_string(s);
        call.tool_calls.push_back({id, ToolNameOf(key), arguments});
        TraceMessage result{
            "tool",
            CutToTokens(skills.at(key).text, options.max_tool_result_tokens, options.count_tokens),
            {},
            id};
        tokens += options.count_tokens(call.tool_calls[0].name) + options.count_tokens(arguments) +
                  options.count_tokens(result.content);
        step.transcript.push_back(std::move(call));
        step.transcript.push_back(std::move(result));
      }
      if (options.max_prompt_tokens > 0 && tokens > options.max_prompt_tokens) break;
      step.id = "agent-tools:" + task.id + "#" + std::to_string(s + 1);
      step.phase = "step " + std::to_string(s + 1);
      trace.requests.push_back(step);
    }
  }
  if (trace.requests.empty()) {
    return InvalidArgumentError(
        "agent-tools trace: the tools and each task exceed max_prompt_tokens " +
        std::to_string(options.max_prompt_tokens) +
        " (a larger context or fewer catalogue skills makes them fit)");
  }
  return trace;
}

}  // namespace reprise::workload
