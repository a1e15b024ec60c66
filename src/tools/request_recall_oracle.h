// RequestRecallOracle: reuse recall for benchmarks that drive a server from outside (`bench
// serve`). Request after request, counts the prompt tokens that a window of `window` tokens
// seen in an earlier request's prompt covers (reuse/reuse_recall_oracle.h), the prompts built
// and tokenized as the engine builds and tokenizes them (reprise::PromptTokenizer: the model
// file's own tokenizer and chat format; no weights loaded into memory, the file is mapped).
//
// Thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "reprise/engine.h"
#include "reuse/reuse_recall_oracle.h"

namespace reprise::tools {

// The reusable tokens (1 in `reusable`, one byte per prompt token) inside the [begin, end)
// runs of `found` (in order, disjoint), runs cut at the mask's end: found ∩ reusable, what a
// server or a plan found of what the oracle says could be found.
template <typename Index>
int64_t CountReusableIn(std::span<const uint8_t> reusable,
                        std::span<const std::pair<Index, Index>> found) {
  int64_t count = 0;
  const auto size = static_cast<int64_t>(reusable.size());
  for (const auto& [begin, end] : found) {
    const int64_t b = std::clamp<int64_t>(begin, 0, size);
    const int64_t e = std::clamp<int64_t>(end, b, size);
    count += std::count(reusable.begin() + b, reusable.begin() + e, uint8_t{1});
  }
  return count;
}

class RequestRecallOracle {
 public:
  // Errors: those of PromptTokenizer::Open; InvalidArgument for window < 1.
  static Result<std::unique_ptr<RequestRecallOracle>> Open(const std::string& model_path,
                                                           int window);

  // The reusable tokens of `request`'s prompt; then remembers the prompt.
  int64_t CountThenAdd(const GenerateRequest& request);
  // The same token by token: one byte per prompt token (as PromptTokenizer gives them), 1
  // where the token is reusable; then remembers the prompt.
  std::vector<uint8_t> MaskThenAdd(const GenerateRequest& request);

 private:
  RequestRecallOracle(std::unique_ptr<PromptTokenizer> tokenizer, int window)
      : tokenizer_(std::move(tokenizer)), oracle_(window) {}
  std::unique_ptr<PromptTokenizer> tokenizer_;
  reuse::ReuseRecallOracle oracle_;
};

}  // namespace reprise::tools
