// PlanReuse: labels every prompt token PREFIX, NONPREFIX (with the cached chunk and position it
// comes from) or NEW (docs/design.md §1-2, the "match" and "plan" steps).
//
// Matching, in order:
//  1. prefix: walk the prefix tree chunk by chunk (exact entries only, unless
//     use_inexact_prefix); in the first chunk
//     that misses, take the longest common token prefix with a cached child of the last node;
//  2. for every later chunk of at least min_whole_chunk_tokens: an entry with the same
//     content (its tokens verified), reused whole at the new position;
//  3. otherwise candidates sharing span fingerprints (kv/span_fingerprints.h: every cached
//     chunk that shares kGuaranteedSpanTokens tokens with the unmatched part, up to
//     `max_candidates`), and the longest common token substring with each (a suffix
//     automaton); spans of at least `min_match_tokens` are reused, greedily, best first, in
//     the parts of the chunk still unmatched.
// Planning is pure: it reads the cache's index only (ChunkCache::Peek, PeekByContent,
// Children, FindCandidates), loads no KV, counts no hit and changes nothing. The plan's
// `sources` are the entries as the index describes them — their `kv` set only when they were
// in memory — and KvLoader (kv_loader.h) brings their KV in, verified against the plan.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kv/chunk_cache.h"
#include "reuse/chunk_merge_scheduler.h"

namespace reprise::reuse {

// One chunk of the prompt: tokens [begin, end) of one segment.
struct PromptChunk {
  int begin = 0;
  int end = 0;
  kv::ContentHash content = 0;
};

enum class TokenKind : uint8_t { kPrefix, kNonPrefix, kNew };

struct TokenSource {
  TokenKind kind = TokenKind::kNew;
  int source = -1;        // index into ReusePlan::sources (PREFIX and NONPREFIX)
  int source_token = 0;   // the token's index within that source chunk
};

struct ReusePlan {
  std::vector<TokenSource> tokens;  // [prompt length]
  // The cached entries the reused tokens come from (tokens, links, exactness; `kv` only for
  // those that were in memory): what KvLoader loads.
  std::vector<std::shared_ptr<const kv::ChunkEntry>> sources;
  int num_prefix = 0;
  // Of the prefix tokens, those from the first inexact entry of the walk on (their KV, and
  // everything computed after it, is approximate); the first such token, or -1.
  int num_prefix_inexact = 0;
  int first_inexact_prefix_token = -1;
  int num_nonprefix = 0;
  int num_new = 0;
  // The prefix-tree id each prompt chunk has (or gets) on this prompt's path.
  std::vector<kv::ChunkId> chunk_ids;

  // Consecutive runs of one kind, for the scheduler; a NONPREFIX run also ends where its
  // source changes (another cached chunk, or a jump within one), so each is one reused
  // piece (the naive schedule gives each its own calls).
  std::vector<TokenRun> Runs() const;
  // "prefix 310 | nonprefix 420 (3 chunks, 1 substring) | new 35".
  std::string Summary() const;
  int num_substring_matches = 0;
  int num_whole_chunk_matches = 0;
};

struct PlannerOptions {
  bool use_prefix = true;
  // The prefix walk also takes inexact entries (KV that an earlier request blended): the same
  // tokens at the same positions after the same path, so their KV is what that request used —
  // as a server slot keeps it — and nothing is recomputed again. Off: exact entries only (the
  // `prefix` method's bit-exact promise).
  bool use_inexact_prefix = false;
  bool use_nonprefix = true;
  bool use_substrings = true;
  // Below kv::kGuaranteedSpanTokens, a chunk that shares only a shorter span is found by
  // chance (spans found in a candidate found otherwise are always taken).
  int min_match_tokens = 32;
  // A whole chunk shorter than this is not reused at a new position (nor is a span shorter
  // than min_match_tokens): the KV of a few tokens says more about the text before them
  // where they were cached than about themselves. Measured: content-defined chunking leaves
  // a segment's short last piece (a question's closing line and turn marker) as a chunk of
  // its own, the same in every prompt; reused right before the generation point it took
  // stories260K chat's KL from 0.0098 to 0.033 (full) and 0.0041 to 0.0084 (blend).
  int min_whole_chunk_tokens = 32;
  int max_candidates = 32;
  // The last prompt token must run through the model (its logits start generation).
  bool force_last_token_new = true;
  // Entries not to use: those whose KV could not be loaded as an earlier plan expected
  // (evicted since, a damaged file, tokens that differ from the index's).
  std::vector<kv::ChunkId> excluded;
};

// Requires: chunks are consecutive, cover [0, prompt.size()), and carry their content hashes.
// Errors: InvalidArgument when they do not.
Result<ReusePlan> PlanReuse(std::span<const int32_t> prompt, std::span<const PromptChunk> chunks,
                            kv::ChunkCache& cache, const PlannerOptions& options);

}  // namespace reprise::reuse
