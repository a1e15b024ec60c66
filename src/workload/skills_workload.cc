#include "workload/skills_workload.h"

#include <algorithm>
#include <map>

#include "base/check.h"
#include "workload/json_input.h"
#include "workload/prompt_fitting.h"
#include "workload/text_chunker.h"

namespace reprise::workload {
namespace {

struct Skill {
  std::string name;
  std::string description;  // "" when null
  std::string text;
};

struct Task {
  std::string id;
  std::string instruction;
  std::vector<std::string> skill_keys;
};

Result<Skill> ParseSkill(const nlohmann::json& value, const std::string& what) {
  Skill skill;
  REPRISE_ASSIGN_OR_RETURN(skill.name, JsonStringField(value, "name", what));
  REPRISE_ASSIGN_OR_RETURN(skill.text, JsonStringField(value, "text", what));
  if (value.contains("description") && !value["description"].is_null()) {
    REPRISE_ASSIGN_OR_RETURN(skill.description, JsonStringField(value, "description", what));
    std::replace(skill.description.begin(), skill.description.end(), '\n', ' ');
  }
  return skill;
}

Result<Task> ParseTask(const nlohmann::json& value, const std::string& what,
                       const std::map<std::string, Skill>& skills) {
  Task task;
  REPRISE_ASSIGN_OR_RETURN(task.id, JsonStringField(value, "task_id", what));
  REPRISE_ASSIGN_OR_RETURN(task.instruction, JsonStringField(value, "instruction", what));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* keys, JsonArrayField(value, "skills", what));
  for (const nlohmann::json& key : *keys) {
    if (!key.is_string()) {
      return CorruptError(what + ": a skill key is not a string but " + key.type_name());
    }
    const std::string& name = key.get_ref<const std::string&>();
    if (!skills.contains(name)) {
      return CorruptError(what + ": skill '" + name + "' is not in the file's skills");
    }
    task.skill_keys.push_back(name);
  }
  return task;
}

bool ShareSkill(const Task& a, const Task& b) {
  for (const std::string& key : a.skill_keys) {
    if (std::find(b.skill_keys.begin(), b.skill_keys.end(), key) != b.skill_keys.end()) {
      return true;
    }
  }
  return false;
}

// Greedy reorder: the next task is the first remaining one that shares no skill with the
// previous one (or the first remaining one when all do).
std::vector<Task> InterleaveSharedSkills(std::vector<Task> tasks) {
  std::vector<Task> ordered;
  ordered.reserve(tasks.size());
  while (!tasks.empty()) {
    size_t pick = 0;
    if (!ordered.empty()) {
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (!ShareSkill(ordered.back(), tasks[i])) {
          pick = i;
          break;
        }
      }
    }
    ordered.push_back(std::move(tasks[pick]));
    tasks.erase(tasks.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  return ordered;
}

}  // namespace

Result<Workload> BuildSkillsWorkload(const SkillsOptions& options) {
  const WorkloadOptions& common = options.common;
  REPRISE_RETURN_IF_ERROR(ValidateOptions(common));
  if (options.max_catalog_skills < 0) {
    return InvalidArgumentError("skills: max_catalog_skills must be >= 0 (0 = all), got " +
                                std::to_string(options.max_catalog_skills));
  }
  const std::string path = ResolveDataPath(common, options.file);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json root, ReadJsonFile(path));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* skills_json,
                           JsonObjectField(root, "skills", path));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* tasks_json, JsonArrayField(root, "tasks", path));

  // Sorted by key: the catalogue order does not depend on the JSON library's object order.
  std::map<std::string, Skill> skills;
  for (auto it = skills_json->begin(); it != skills_json->end(); ++it) {
    REPRISE_ASSIGN_OR_RETURN(Skill skill, ParseSkill(*it, path + ": skill '" + it.key() + "'"));
    skills.emplace(it.key(), std::move(skill));
  }
  std::vector<Task> tasks;
  for (size_t t = 0; t < tasks_json->size(); ++t) {
    REPRISE_ASSIGN_OR_RETURN(
        Task task, ParseTask((*tasks_json)[t], path + ": task " + std::to_string(t), skills));
    if (task.skill_keys.empty() && options.skip_tasks_without_skills) continue;
    tasks.push_back(std::move(task));
  }
  if (tasks.empty()) return CorruptError(path + ": holds no tasks");
  if (options.interleave_shared_skills) tasks = InterleaveSharedSkills(std::move(tasks));

  std::string catalog = "Available skills:\n";
  int num_listed = 0;
  for (const auto& [key, skill] : skills) {
    if (options.max_catalog_skills > 0 && num_listed == options.max_catalog_skills) break;
    catalog += "- " + skill.name;
    if (!skill.description.empty()) catalog += ": " + skill.description;
    catalog += "\n";
    ++num_listed;
  }

  // Every kept skill's pieces: the collection.
  BuilderCounts counts;
  std::map<std::string, std::vector<Segment>> pieces;
  const ChunkingOptions chunking{.max_tokens = common.chunk_tokens, .suffix = "\n"};
  for (const auto& [key, skill] : skills) {
    const TextGroup group{"Skill: " + skill.name + "\n", SplitLines(skill.text)};
    REPRISE_ASSIGN_OR_RETURN(std::vector<TextChunk> chunks,
                             PackIntoChunks({&group, 1}, chunking, common.count_tokens));
    std::vector<Segment>& segments = pieces[key];
    for (size_t c = 0; c < chunks.size(); ++c) {
      segments.push_back({std::string(kRoleSkill), std::move(chunks[c].text),
                          "skill:" + key + "#" + std::to_string(c)});
    }
  }

  size_t num_queries = tasks.size();
  if (common.num_queries > 0) {
    num_queries = std::min(num_queries, static_cast<size_t>(common.num_queries));
  }
  std::vector<Request> requests;
  for (size_t t = 0; t < num_queries; ++t) {
    const Task& task = tasks[t];
    PromptParts parts;
    parts.id = "skills:" + task.id;
    parts.system = {std::string(kRoleSystem), catalog, "system:skills-catalog"};
    for (const std::string& key : task.skill_keys) {
      auto it = pieces.find(key);
      REPRISE_CHECK(it != pieces.end()) << "skill key '" << key << "' checked by ParseTask";
      parts.contexts.insert(parts.contexts.end(), it->second.begin(), it->second.end());
    }
    parts.question = {std::string(kRoleQuestion), "Task:\n" + task.instruction, ""};
    FittedPrompt fitted =
        FitPrompt(std::move(parts), common.max_prompt_tokens, common.count_tokens);
    if (!fitted.request) {
      ++counts.num_skipped_requests;
      continue;
    }
    counts.num_dropped_segments += fitted.num_dropped_contexts;
    requests.push_back(std::move(*fitted.request));
  }
  std::vector<Segment> collection;
  for (auto& [key, segments] : pieces) {
    for (Segment& segment : segments) collection.push_back(std::move(segment));
  }
  return FinishWorkload("skills", std::move(requests), std::move(collection), counts, common);
}

}  // namespace reprise::workload
