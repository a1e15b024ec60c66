// What every workload builder takes and returns: the common options and the Workload, a
// sequence of requests plus its reuse statistics.
//
// Builders: BuildDocQaWorkload (docqa_workload.h, HotpotQA), BuildChatWorkload
// (chat_workload.h, LoCoMo), BuildSkillsWorkload (skills_workload.h, SkillsBench), and
// BuildNamedWorkload (named_workload.h) which picks one by name for the command line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "workload/request.h"
#include "workload/workload_stats.h"

namespace reprise::workload {

struct WorkloadOptions {
  // The shared data folder (the one that holds workloads/); data file paths given relative
  // are resolved against it. The caller passes it (the CLI from a flag, tests from
  // SharedDataDir()).
  std::string data_dir;
  int num_queries = 0;     // how many requests to consider, in workload order; 0 = all
  int top_chunks = 6;      // retrieved chunks per request (docqa, chat)
  int chunk_tokens = 512;  // each document/turn/skill segment holds at most this many tokens
  // The prompt (sum of segment token counts) must not exceed this; the lowest-ranked context
  // segments are dropped until it fits, and a request that does not fit even without context
  // is skipped (counted in the stats). 0 = no limit. Leave room in it for BOS, a chat
  // template and the generated tokens.
  int max_prompt_tokens = 0;
  CountTokensFn count_tokens;  // required
  // skills: list at most this many skills in the shared catalogue (0 = all), so that small
  // models' contexts can hold it.
  int max_catalog_skills = 0;
  // docqa workloads: this HotpotQA JSON Lines file (absolute, or relative to data_dir) instead
  // of the shared data's, e.g. the demo kit's data/demo/hotpotqa_demo_30.jsonl. Empty = theirs.
  std::string docqa_file;
};

struct Workload {
  std::string name;  // "docqa", "chat", "skills"
  std::vector<Request> requests;
  // Every context segment the requests could draw from, each once, in collection order
  // (docqa: all document chunks; chat: the history chunks of the conversations used;
  // skills: the pieces of every kept skill). An engine can pre-compute their KV to measure
  // reuse against a warm store, as a RAG system that caches its corpus would.
  std::vector<Segment> collection;
  WorkloadStats stats;
};

// What a builder counted besides the requests (see WorkloadStats).
struct BuilderCounts {
  int num_skipped_requests = 0;
  int num_dropped_segments = 0;
};

// Wraps up a builder's output: the requests, the collection, their ComputeReuseStats and
// the builder's counts. Errors: InvalidArgument when every request was skipped by
// max_prompt_tokens.
Result<Workload> FinishWorkload(std::string name, std::vector<Request> requests,
                                std::vector<Segment> collection, const BuilderCounts& counts,
                                const WorkloadOptions& options);

// Checks the common options. Errors: InvalidArgument naming the field.
Status ValidateOptions(const WorkloadOptions& options);

// `path` when absolute, else data_dir + "/" + path (or path itself when data_dir is empty).
std::string ResolveDataPath(const WorkloadOptions& options, std::string_view path);

}  // namespace reprise::workload
