// Assembles a request from its parts and enforces the max_prompt_tokens guard, so that the
// small trained models (512-token context) can run the workloads: the lowest-ranked context
// segments are dropped until the prompt fits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workload/request.h"

namespace reprise::workload {

struct PromptParts {
  std::string id;
  Segment system;
  std::vector<Segment> contexts;  // best first: the guard drops from the back
  Segment question;
  std::string reference_answer;
};

struct FittedPrompt {
  std::optional<Request> request;  // nullopt: system + question alone exceed the limit
  int num_dropped_contexts = 0;    // 0 when request is nullopt
};

// The request [system, contexts..., question], with as many leading contexts as fit in
// max_prompt_tokens (sum of count_tokens over the segment texts; 0 = no limit).
FittedPrompt FitPrompt(PromptParts parts, int max_prompt_tokens, const CountTokensFn& count_tokens);

}  // namespace reprise::workload
