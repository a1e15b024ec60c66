#include "workload/named_workload.h"

#include <array>

#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/skills_workload.h"

namespace reprise::workload {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"docqa", "docqa-distractor", "chat",
                                                    "chat-window", "skills"};

}  // namespace

std::span<const std::string_view> WorkloadNames() { return kNames; }

Result<Workload> BuildNamedWorkload(std::string_view name, const WorkloadOptions& options) {
  if (name == "docqa" || name == "docqa-distractor") {
    DocQaOptions docqa{.common = options};
    if (name == "docqa-distractor") docqa.file = std::string(kHotpotDistractorFile);
    REPRISE_ASSIGN_OR_RETURN(Workload workload, BuildDocQaWorkload(docqa));
    workload.name = std::string(name);
    return workload;
  }
  if (name == "chat") return BuildChatWorkload({.common = options});
  if (name == "chat-window") return BuildChatWindowWorkload({.common = options});
  if (name == "skills") {
    SkillsOptions skills{.common = options};
    skills.max_catalog_skills = options.max_catalog_skills;
    return BuildSkillsWorkload(skills);
  }
  std::string known;
  for (std::string_view n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  return InvalidArgumentError("unknown workload '" + std::string(name) + "' (known: " + known +
                              ")");
}

}  // namespace reprise::workload
