#include "workload/workload_stats.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "base/check.h"

namespace reprise::workload {
namespace {

double Ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0.0;
}

// The identity of a segment for prefix matching: its source_id, or its text when it has none
// (a question equal to an earlier one is a prefix hit too).
std::string SegmentKey(const Segment& segment) {
  if (!segment.source_id.empty()) return "i:" + segment.source_id;
  return "t:" + segment.role + ":" + segment.text;
}

}  // namespace

double WorkloadStats::RepeatedContextFraction() const {
  return Ratio(static_cast<double>(num_repeated_context_segments),
               static_cast<double>(num_context_segments));
}
double WorkloadStats::AvgPromptTokens() const {
  return Ratio(static_cast<double>(num_prompt_tokens), num_requests);
}
double WorkloadStats::PrefixReusableFraction() const {
  return Ratio(static_cast<double>(num_prefix_reusable_tokens),
               static_cast<double>(num_prompt_tokens));
}
double WorkloadStats::NonprefixReusableFraction() const {
  return Ratio(static_cast<double>(num_nonprefix_reusable_tokens),
               static_cast<double>(num_prompt_tokens));
}

WorkloadStats ComputeReuseStats(std::span<const Request> requests,
                                const CountTokensFn& count_tokens) {
  WorkloadStats stats;
  stats.num_requests = static_cast<int>(requests.size());
  // source_id -> (text, tokens): counts each distinct content once and checks that equal
  // ids carry equal texts.
  std::unordered_map<std::string, std::pair<const std::string*, int>> sources;
  std::unordered_set<std::string> seen_before;    // source_ids of earlier requests
  std::unordered_set<std::string> seen_prefixes;  // keys of earlier requests' leading runs
  std::unordered_set<std::string> context_sources;

  for (const Request& request : requests) {
    std::vector<int> tokens(request.segments.size());
    for (size_t i = 0; i < request.segments.size(); ++i) {
      const Segment& segment = request.segments[i];
      if (segment.source_id.empty()) {
        tokens[i] = count_tokens(segment.text);
        continue;
      }
      auto [it, inserted] = sources.try_emplace(segment.source_id, &segment.text, 0);
      if (inserted) {
        it->second.second = count_tokens(segment.text);
      } else {
        REPRISE_CHECK(*it->second.first == segment.text)
            << "source_id '" << segment.source_id << "' names two different texts";
      }
      tokens[i] = it->second.second;
    }

    // Longest run of leading segments that an earlier request also started with.
    size_t prefix_segments = 0;
    std::string key;
    std::vector<std::string> keys;
    keys.reserve(request.segments.size());
    for (size_t i = 0; i < request.segments.size(); ++i) {
      key += SegmentKey(request.segments[i]);
      key += '\x1f';
      if (prefix_segments == i && seen_prefixes.contains(key)) prefix_segments = i + 1;
      keys.push_back(key);
    }

    int64_t request_tokens = 0;
    for (size_t i = 0; i < request.segments.size(); ++i) {
      const Segment& segment = request.segments[i];
      request_tokens += tokens[i];
      const bool seen = !segment.source_id.empty() && seen_before.contains(segment.source_id);
      if (i < prefix_segments) {
        stats.num_prefix_reusable_tokens += tokens[i];
      } else if (seen) {
        stats.num_nonprefix_reusable_tokens += tokens[i];
      }
      if (IsContextRole(segment.role)) {
        ++stats.num_context_segments;
        if (seen) ++stats.num_repeated_context_segments;
        context_sources.insert(segment.source_id);
      }
    }
    stats.num_prompt_tokens += request_tokens;
    stats.max_request_prompt_tokens =
        std::max(stats.max_request_prompt_tokens, static_cast<int>(request_tokens));

    // Only after the whole request: a chunk repeated inside one request is not "earlier".
    for (const Segment& segment : request.segments) {
      if (!segment.source_id.empty()) seen_before.insert(segment.source_id);
    }
    for (std::string& k : keys) seen_prefixes.insert(std::move(k));
  }
  stats.num_distinct_context_sources = static_cast<int>(context_sources.size());
  return stats;
}

std::string FormatWorkloadStats(const WorkloadStats& s) {
  char buffer[1024];
  std::snprintf(
      buffer, sizeof(buffer),
      "requests: %d (skipped as too long: %d), collection chunks: %d\n"
      "context segments: %lld, retrieved earlier: %lld (%.1f%%), distinct: %d, dropped by "
      "max_prompt_tokens: %d\n"
      "prompt tokens: avg %.1f, max %d, total %lld; prefix-reusable %.1f%%, "
      "non-prefix-reusable %.1f%%\n",
      s.num_requests, s.num_skipped_requests, s.num_collection_chunks,
      static_cast<long long>(s.num_context_segments),
      static_cast<long long>(s.num_repeated_context_segments), 100.0 * s.RepeatedContextFraction(),
      s.num_distinct_context_sources, s.num_dropped_segments, s.AvgPromptTokens(),
      s.max_request_prompt_tokens, static_cast<long long>(s.num_prompt_tokens),
      100.0 * s.PrefixReusableFraction(), 100.0 * s.NonprefixReusableFraction());
  return buffer;
}

}  // namespace reprise::workload
