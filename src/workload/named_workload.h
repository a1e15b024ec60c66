// Picks a workload builder by name, for `reprise bench reuse --workload <name>`.
//
// Names: "docqa" (HotpotQA fullwiki, 500 questions), "docqa-distractor" (HotpotQA
// distractor, 100 questions), "chat" (LoCoMo, category 5 skipped), "chat-window" (LoCoMo as a
// chat whose window moves; needs max_prompt_tokens), "skills" (SkillsBench, full catalogue,
// file order); and each of them with "-plain" ("docqa-plain", "chat-plain", ...): the same
// requests with the documents, turns or skills and the question pasted into one segment after
// the system prompt, as plain-text prompts (for reuse recall where no segment boundaries are
// given). Each uses its builder's defaults beyond the common options; callers
// that need the other options (max_conversations, max_catalog_skills, ...) call the builders.
#pragma once

#include <span>
#include <string_view>

#include "base/status.h"
#include "workload/workload.h"

namespace reprise::workload {

// The names BuildNamedWorkload accepts, in a fixed order.
std::span<const std::string_view> WorkloadNames();

// Errors: InvalidArgument for an unknown name (listing the known ones), else the builder's.
Result<Workload> BuildNamedWorkload(std::string_view name, const WorkloadOptions& options);

}  // namespace reprise::workload
