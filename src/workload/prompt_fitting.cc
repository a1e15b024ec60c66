#include "workload/prompt_fitting.h"

namespace reprise::workload {

FittedPrompt FitPrompt(PromptParts parts, int max_prompt_tokens,
                       const CountTokensFn& count_tokens) {
  FittedPrompt fitted;
  size_t num_kept = parts.contexts.size();
  if (max_prompt_tokens > 0) {
    int64_t total = count_tokens(parts.system.text) + count_tokens(parts.question.text);
    if (total > max_prompt_tokens) return fitted;
    // Keep the longest run of best-ranked contexts that fits: a lower-ranked chunk never
    // replaces a dropped better one, so the prompt stays a prefix of the ranking.
    num_kept = 0;
    while (num_kept < parts.contexts.size()) {
      const int tokens = count_tokens(parts.contexts[num_kept].text);
      if (total + tokens > max_prompt_tokens) break;
      total += tokens;
      ++num_kept;
    }
  }
  fitted.num_dropped_contexts = static_cast<int>(parts.contexts.size() - num_kept);

  Request request;
  request.id = std::move(parts.id);
  request.reference_answer = std::move(parts.reference_answer);
  request.segments.reserve(num_kept + 2);
  request.segments.push_back(std::move(parts.system));
  for (size_t i = 0; i < num_kept; ++i) request.segments.push_back(std::move(parts.contexts[i]));
  request.segments.push_back(std::move(parts.question));
  fitted.request = std::move(request);
  return fitted;
}

}  // namespace reprise::workload
