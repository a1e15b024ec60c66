#include "reuse/reuse_recall_losses.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace reprise::reuse {
namespace {

// "Every candidate": the cap of a search that must not be capped.
constexpr int kAllCandidates = 1 << 20;

// Hashes of every window of `window` tokens of a sequence, rolling (a polynomial over 2^64):
// collisions between different windows are negligible for a benchmark's breakdown.
class WindowHasher {
 public:
  explicit WindowHasher(int window) : window_(window) {
    for (int i = 1; i < window_; ++i) top_power_ *= kBase;
  }

  template <typename Visit>  // Visit(size_t window_begin, uint64_t hash)
  void ForEach(std::span<const int32_t> tokens, Visit&& visit) const {
    const size_t w = static_cast<size_t>(window_);
    if (tokens.size() < w) return;
    uint64_t h = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i >= w) h -= Mix(tokens[i - w]) * top_power_;
      h = h * kBase + Mix(tokens[i]);
      if (i + 1 >= w) visit(i + 1 - w, h);
    }
  }

 private:
  static constexpr uint64_t kBase = 0x100000001b3ull;
  static uint64_t Mix(int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 1) * 0x9e3779b97f4a7c15ull;
  }
  int window_;
  uint64_t top_power_ = 1;
};

std::unordered_set<uint64_t> CandidateWindows(kv::ChunkCache& cache,
                                              std::span<const int32_t> tokens,
                                              std::string_view text, int max_candidates,
                                              const WindowHasher& hasher) {
  std::unordered_set<uint64_t> windows;
  for (const kv::ChunkCandidate& c : cache.FindCandidates(tokens, text, max_candidates)) {
    // An implementation that lists ids only is not looked up: that would load KV.
    if (!c.entry) continue;
    hasher.ForEach(c.entry->tokens, [&](size_t, uint64_t h) { windows.insert(h); });
  }
  return windows;
}

// 1 for each token of `tokens` inside one of its windows that `windows` holds.
std::vector<uint8_t> Covered(std::span<const int32_t> tokens,
                             const std::unordered_set<uint64_t>& windows, int window,
                             const WindowHasher& hasher) {
  std::vector<int> delta(tokens.size() + 1, 0);
  hasher.ForEach(tokens, [&](size_t begin, uint64_t h) {
    if (windows.count(h) != 0) {
      ++delta[begin];
      --delta[begin + static_cast<size_t>(window)];
    }
  });
  std::vector<uint8_t> covered(tokens.size(), 0);
  int depth = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    depth += delta[i];
    covered[i] = depth > 0;
  }
  return covered;
}

// Maximal runs [begin, end) of NEW tokens within [from, to).
std::vector<std::pair<int, int>> NewRuns(std::span<const TokenKind> kinds, int from, int to) {
  std::vector<std::pair<int, int>> runs;
  for (int i = from; i < to; ++i) {
    if (kinds[static_cast<size_t>(i)] != TokenKind::kNew) continue;
    if (!runs.empty() && runs.back().second == i) {
      runs.back().second = i + 1;
    } else {
      runs.emplace_back(i, i + 1);
    }
  }
  return runs;
}

}  // namespace

Result<RecallLosses> ClassifyRecallLosses(const RecallLossInputs& in, kv::ChunkCache& cache) {
  const size_t n = in.prompt.size();
  if (in.kinds.size() != n || in.reusable.size() != n ||
      (!in.within_chunk.empty() && in.within_chunk.size() != n)) {
    return InvalidArgumentError("token labels and reusable mask must match the prompt's length");
  }
  if (in.window < 1) return InvalidArgumentError("the window must be at least 1 token");
  int expected_begin = 0;
  for (const PromptChunk& c : in.chunks) {
    if (c.begin != expected_begin || c.end <= c.begin) {
      return InvalidArgumentError("prompt chunks are not consecutive and non-empty");
    }
    expected_begin = c.end;
  }
  if (expected_begin != static_cast<int>(n)) {
    return InvalidArgumentError("prompt chunks do not cover the prompt");
  }

  RecallLosses out;
  std::vector<uint8_t> need(n, 0);  // reusable, left NEW, cause not yet known
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    need[i] = in.reusable[i] && in.kinds[i] == TokenKind::kNew;
    any = any || need[i];
  }
  if (!any) return out;
  if (need[n - 1]) {
    ++out.last_token;
    need[n - 1] = 0;
  }
  const WindowHasher hasher(in.window);
  const auto sub = [&](int begin, int end) {
    return in.prompt.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  };
  const auto needs_any = [&](int begin, int end) {
    return std::any_of(need.begin() + begin, need.begin() + end, [](uint8_t x) { return x; });
  };

  // 1. Inside each prompt chunk's unmatched part, searched as the planner searched it.
  for (const PromptChunk& c : in.chunks) {
    if (!needs_any(c.begin, c.end)) continue;
    int begin = c.begin;
    while (begin < c.end && in.kinds[static_cast<size_t>(begin)] == TokenKind::kPrefix) ++begin;
    if (c.end - begin < in.window) continue;
    const auto given = CandidateWindows(cache, sub(begin, c.end), {}, in.max_candidates, hasher);
    const auto all = CandidateWindows(cache, sub(begin, c.end), {}, kAllCandidates, hasher);
    for (const auto& [rb, re] : NewRuns(in.kinds, begin, c.end)) {
      if (!needs_any(rb, re)) continue;
      const std::vector<uint8_t> in_given = Covered(sub(rb, re), given, in.window, hasher);
      const std::vector<uint8_t> in_all = Covered(sub(rb, re), all, in.window, hasher);
      for (int i = rb; i < re; ++i) {
        if (!need[static_cast<size_t>(i)]) continue;
        const size_t k = static_cast<size_t>(i - rb);
        if (in_given[k]) {
          ++out.matcher;
        } else if (in_all[k]) {
          ++out.candidates_capped;
        } else {
          continue;
        }
        need[static_cast<size_t>(i)] = 0;
      }
    }
  }

  // 2. Across prompt chunk boundaries, then together with reused neighbours.
  const int num = static_cast<int>(n);
  for (const std::pair<int, int>& run : NewRuns(in.kinds, 0, num)) {
    // (Not a structured binding: the lambda below captures these.)
    const int rb = run.first, re = run.second;
    if (!needs_any(rb, re)) continue;
    const auto classify = [&](int begin, int end, int64_t& cause) {
      const auto windows = CandidateWindows(cache, sub(begin, end), {}, kAllCandidates, hasher);
      const std::vector<uint8_t> covered = Covered(sub(begin, end), windows, in.window, hasher);
      for (int i = rb; i < re; ++i) {
        if (need[static_cast<size_t>(i)] && covered[static_cast<size_t>(i - begin)]) {
          ++cause;
          need[static_cast<size_t>(i)] = 0;
        }
      }
    };
    classify(rb, re, out.prompt_chunk_split);
    if (!needs_any(rb, re)) continue;
    classify(std::max(0, rb - in.window + 1), std::min(num, re + in.window - 1), out.seam);
    for (int i = rb; i < re; ++i) {
      if (!need[static_cast<size_t>(i)]) continue;
      if (!in.within_chunk.empty() && !in.within_chunk[static_cast<size_t>(i)]) {
        ++out.cached_chunk_split;
      } else {
        ++out.not_cached;
      }
    }
  }
  return out;
}

RecallLosses& RecallLosses::operator+=(const RecallLosses& o) {
  last_token += o.last_token;
  matcher += o.matcher;
  candidates_capped += o.candidates_capped;
  prompt_chunk_split += o.prompt_chunk_split;
  seam += o.seam;
  cached_chunk_split += o.cached_chunk_split;
  not_cached += o.not_cached;
  return *this;
}

std::string DescribeRecallLosses(const RecallLosses& losses) {
  std::vector<std::pair<int64_t, const char*>> causes = {
      {losses.not_cached, "not cached"},
      {losses.seam, "seam"},
      {losses.cached_chunk_split, "split by a cached chunk boundary"},
      {losses.prompt_chunk_split, "split by a prompt chunk boundary"},
      {losses.candidates_capped, "candidates capped"},
      {losses.matcher, "matcher"},
      {losses.last_token, "last token"}};
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [tokens, name] : causes) {
    if (tokens == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string(name) + " " + std::to_string(tokens);
  }
  return out.empty() ? "none" : out;
}

}  // namespace reprise::reuse
