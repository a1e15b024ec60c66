#include "reuse/reuse_recall_oracle.h"

#include <vector>

#include "kv/chunk.h"

namespace reprise::reuse {

uint64_t ReuseRecallOracle::WindowHash(std::span<const int32_t> tokens, size_t begin) const {
  return kv::HashTokens(/*model_fingerprint=*/0, tokens.subspan(begin, static_cast<size_t>(window_)));
}

int ReuseRecallOracle::CountReusable(std::span<const int32_t> prompt) const {
  int reusable = 0;
  for (uint8_t r : ReusableMask(prompt)) reusable += r;
  return reusable;
}

std::vector<uint8_t> ReuseRecallOracle::ReusableMask(std::span<const int32_t> prompt) const {
  std::vector<uint8_t> mask(prompt.size(), 0);
  const size_t w = static_cast<size_t>(window_);
  if (prompt.size() < w || seen_.empty()) return mask;
  // covered[i] > 0 when token i lies in a seen window: +1 at a window's start, -1 past its end.
  std::vector<int> delta(prompt.size() + 1, 0);
  for (size_t s = 0; s + w <= prompt.size(); ++s) {
    if (seen_.count(WindowHash(prompt, s)) != 0) {
      ++delta[s];
      --delta[s + w];
    }
  }
  int depth = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    depth += delta[i];
    mask[i] = depth > 0;
  }
  return mask;
}

void ReuseRecallOracle::Add(std::span<const int32_t> tokens) {
  const size_t w = static_cast<size_t>(window_);
  for (size_t s = 0; s + w <= tokens.size(); ++s) seen_.insert(WindowHash(tokens, s));
}

}  // namespace reprise::reuse
