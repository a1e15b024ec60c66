// The skills workload: agent tasks (SkillsBench) whose prompts share a skill catalogue and
// carry the full text of the skills each task ships with.
//
// Prompt of a task:
//   system   the catalogue, identical for every task: "Available skills:\n" and a line
//            "- <name>: <description>\n" per kept skill (skill keys in sorted order; "- <name>\n"
//            when the description is null), the first max_catalog_skills of them
//   skill    each of the task's skills in the task's order: "Skill: <name>\n" + the SKILL.md
//            text verbatim + "\n", cut at line boundaries (a longer line between words) into
//            pieces of at most chunk_tokens tokens, each piece repeating the "Skill:" line;
//            splitting keeps all the content. source_id "skill:<key>#<piece>"
//   question "Task:\n<instruction>"
// Tasks whose skills were all excluded (licence) still get a prompt: catalogue + task, unless
// skip_tasks_without_skills. Under max_prompt_tokens the last skill pieces are dropped first.
//
// Order: file order; with interleave_shared_skills, each next task is the first remaining one
// (in file order) that shares no skill with the task placed just before it, or the first
// remaining one when every remaining task shares a skill with it. num_queries then takes the
// first tasks of that order.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "workload/workload.h"

namespace reprise::workload {

inline constexpr std::string_view kSkillsBenchFile = "workloads/skillsbench/skillsbench_tasks.json";

struct SkillsOptions {
  WorkloadOptions common;                            // top_chunks is not used
  std::string file = std::string(kSkillsBenchFile);  // relative to data_dir, or absolute
  int max_catalog_skills = 0;                        // 0 = every kept skill
  bool skip_tasks_without_skills = false;
  bool interleave_shared_skills = false;
};

// Builds the skills workload. Errors: InvalidArgument (options), NotFound (with the path),
// IoError, Corrupt (naming the file, task or skill and field; also a task naming a skill key
// that the file does not hold).
Result<Workload> BuildSkillsWorkload(const SkillsOptions& options);

}  // namespace reprise::workload
