#include "workload/named_workload.h"

#include <array>
#include <optional>

#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/skills_workload.h"

namespace reprise::workload {
namespace {

// clang-format off
constexpr std::array<std::string_view, 16> kNames = {
    "docqa", "docqa-distractor", "docqa-shuffled", "docqa-hot", "chat", "chat-window", "skills",
    "docqa-plain", "docqa-distractor-plain", "docqa-shuffled-plain", "docqa-hot-plain",
    "chat-plain", "chat-window-plain", "skills-plain", "skills-block", "docqa-orders"};
// clang-format on

constexpr std::string_view kPlainSuffix = "-plain";
constexpr std::string_view kBlockSuffix = "-block";

// The same requests with each prompt's context segments (its skills, documents or turns)
// joined, in order, into one segment of the first one's role: an app that caches its tool or
// skill block as a whole instead of one description at a time. The block is reused exactly
// where the same block recurs after the same prefix, and never piece by piece. The
// collection stays per piece; the name gains "-block".
Workload MakeBlock(Workload workload) {
  for (Request& request : workload.requests) {
    std::vector<Segment> segments;
    std::optional<size_t> block;
    for (Segment& segment : request.segments) {
      if (!IsContextRole(segment.role)) {
        segments.push_back(std::move(segment));
        continue;
      }
      if (!block) {
        block = segments.size();
        segments.push_back(Segment{segment.role, "", ""});
      }
      Segment& b = segments[*block];
      b.text += segment.text;
      b.source_id += (b.source_id.empty() ? "" : "+") + segment.source_id;
    }
    request.segments = std::move(segments);
  }
  workload.name += kBlockSuffix;
  return workload;
}

// The same requests as an app that does not say where its documents are sends them: the
// leading system segments stay, everything after them (the retrieved documents or skills and
// the question) is pasted, verbatim and in order, into one question segment (a RAG
// framework's single user message). The collection stays per document (what a warm cache
// holds); the name gains "-plain".
Workload MakePlain(Workload workload) {
  for (Request& request : workload.requests) {
    std::vector<Segment> segments;
    Segment pasted{.role = std::string(kRoleQuestion), .text = "", .source_id = ""};
    for (Segment& segment : request.segments) {
      if (segment.role == kRoleSystem && pasted.text.empty()) {
        segments.push_back(std::move(segment));
      } else {
        pasted.text += segment.text;
        if (IsContextRole(segment.role)) request.pasted.push_back(std::move(segment));
      }
    }
    if (!pasted.text.empty()) segments.push_back(std::move(pasted));
    request.segments = std::move(segments);
  }
  workload.name += kPlainSuffix;
  return workload;
}

}  // namespace

std::span<const std::string_view> WorkloadNames() { return kNames; }

Result<Workload> BuildNamedWorkload(std::string_view name, const WorkloadOptions& options) {
  if (name.ends_with(kBlockSuffix)) {
    const std::string_view base = name.substr(0, name.size() - kBlockSuffix.size());
    if (!base.ends_with(kBlockSuffix) && !base.ends_with(kPlainSuffix)) {
      REPRISE_ASSIGN_OR_RETURN(Workload workload, BuildNamedWorkload(base, options));
      return MakeBlock(std::move(workload));
    }
  }
  if (name.ends_with(kPlainSuffix)) {
    const std::string_view base = name.substr(0, name.size() - kPlainSuffix.size());
    if (!base.ends_with(kPlainSuffix)) {
      REPRISE_ASSIGN_OR_RETURN(Workload workload, BuildNamedWorkload(base, options));
      return MakePlain(std::move(workload));
    }
  }
  if (name == "docqa" || name == "docqa-distractor" || name == "docqa-shuffled" ||
      name == "docqa-hot" || name == "docqa-orders") {
    DocQaOptions docqa{.common = options};
    if (name == "docqa-distractor" || name == "docqa-shuffled" || name == "docqa-orders") {
      docqa.file = std::string(kHotpotDistractorFile);
    }
    if (!options.docqa_file.empty()) docqa.file = options.docqa_file;
    if (name == "docqa-shuffled") docqa.shuffled_pool = 12;
    if (name == "docqa-hot") docqa.hot_pool = 12;
    if (name == "docqa-orders") docqa.orders_of = 3;
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
