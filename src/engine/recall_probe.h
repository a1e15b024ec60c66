// A benchmark's view into reuse recall (`reprise bench reuse`; docs/benchmarks.md): a request
// run with a recall oracle's mask of its prompt, and where the reusable tokens the plan left
// new were lost (reuse/reuse_recall_losses.h). For benchmarks and tests — not the product API:
// apps never hold an oracle, so GenerateRequest carries none of this.
#pragma once

#include <cstdint>
#include <span>

#include "reprise/engine.h"
#include "reuse/reuse_recall_losses.h"

namespace reprise::engine {

struct RecallProbe {
  // A recall oracle's view of the prompt: one byte per prompt token as PromptTokenizer gives
  // them; 1 = a window of `window` tokens around the token was seen in an earlier prompt (and
  // in `within_chunk`, inside one chunk of it; may be empty).
  std::span<const uint8_t> reusable;
  std::span<const uint8_t> within_chunk;
  int window = 32;
  // Filled by Generate: the oracle's reusable tokens computed anew, by cause (against the
  // cache as the prompt was planned against, before its own chunks went in). Stays zero when
  // the session has no cache.
  reuse::RecallLosses losses;
  bool classified = false;  // whether `losses` was measured

  // As session.Generate(request), diagnosing recall on the way. Errors: those of Generate,
  // InvalidArgument (a mask whose length is not the prompt's).
  Result<GenerateResult> Generate(Session& session, const GenerateRequest& request);
};

}  // namespace reprise::engine
