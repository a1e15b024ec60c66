#include "workload/workload.h"

namespace reprise::workload {

Status ValidateOptions(const WorkloadOptions& options) {
  if (!options.count_tokens) return InvalidArgumentError("workload: count_tokens is not set");
  if (options.num_queries < 0) {
    return InvalidArgumentError("workload: num_queries must be >= 0 (0 = all), got " +
                                std::to_string(options.num_queries));
  }
  if (options.top_chunks < 1) {
    return InvalidArgumentError("workload: top_chunks must be >= 1, got " +
                                std::to_string(options.top_chunks));
  }
  if (options.chunk_tokens < 1) {
    return InvalidArgumentError("workload: chunk_tokens must be >= 1, got " +
                                std::to_string(options.chunk_tokens));
  }
  if (options.max_prompt_tokens < 0) {
    return InvalidArgumentError("workload: max_prompt_tokens must be >= 0 (0 = no limit), got " +
                                std::to_string(options.max_prompt_tokens));
  }
  return Status::Ok();
}

Result<Workload> FinishWorkload(std::string name, std::vector<Request> requests,
                                std::vector<Segment> collection, const BuilderCounts& counts,
                                const WorkloadOptions& options) {
  if (requests.empty() && counts.num_skipped_requests > 0) {
    return InvalidArgumentError(name + ": all " + std::to_string(counts.num_skipped_requests) +
                                " requests exceed max_prompt_tokens " +
                                std::to_string(options.max_prompt_tokens) +
                                " even without context segments (a larger context, or for "
                                "skills a shorter catalogue, makes them fit)");
  }
  Workload workload;
  workload.name = std::move(name);
  workload.stats = ComputeReuseStats(requests, options.count_tokens);
  workload.stats.num_collection_chunks = static_cast<int>(collection.size());
  workload.stats.num_skipped_requests = counts.num_skipped_requests;
  workload.stats.num_dropped_segments = counts.num_dropped_segments;
  workload.requests = std::move(requests);
  workload.collection = std::move(collection);
  return workload;
}

std::string ResolveDataPath(const WorkloadOptions& options, std::string_view path) {
  if (path.starts_with('/') || options.data_dir.empty()) return std::string(path);
  std::string resolved = options.data_dir;
  if (!resolved.ends_with('/')) resolved += '/';
  resolved += path;
  return resolved;
}

}  // namespace reprise::workload
