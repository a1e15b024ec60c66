#include "store/prefetch_policy.h"

#include <algorithm>
#include <tuple>

namespace reprise::store {

PrefetchSelection SelectPrefetch(std::span<const ChunkInfo> candidates, const LocalityModel& model,
                                 double now_s, int64_t budget_bytes,
                                 const PrefetchOptions& options) {
  struct Pick {
    double score;
    bool exact;
    uint64_t id;
    int64_t bytes;
  };
  std::vector<Pick> picks;
  for (const ChunkInfo& chunk : candidates) {
    if (chunk.in_pool || (options.exact_only && !chunk.exact)) continue;
    if (chunk.bytes > budget_bytes) continue;
    const double score = model.PrefetchScore(chunk, now_s);
    if (score < options.threshold) continue;
    picks.push_back({score, chunk.exact, chunk.id, chunk.bytes});
  }
  std::sort(picks.begin(), picks.end(), [](const Pick& a, const Pick& b) {
    // Higher score first, exact first, then lower id.
    return std::tie(b.score, b.exact, a.id) < std::tie(a.score, a.exact, b.id);
  });
  PrefetchSelection selection;
  for (const Pick& pick : picks) {
    if (selection.bytes + pick.bytes > budget_bytes) continue;
    selection.ids.push_back(pick.id);
    selection.bytes += pick.bytes;
  }
  return selection;
}

}  // namespace reprise::store
