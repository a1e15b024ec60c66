// LocalityModel: how likely a stored chunk is to be used again soon (docs/design.md §6, the paper's
// Appendix E). The store's eviction (eviction_policy.h) and prefetch (prefetch_policy.h)
// policies rank chunks by it; it is pure bookkeeping — no I/O, no threads, no clock of its
// own (the store passes `now_s`, seconds on any monotonic clock).
//
// History is kept per content (ChunkInfo::content, the chunk hash; the node id when 0): a
// chunk's text is what a future prompt asks for — non-prefix reuse finds it by content under
// any prefix — so the same text stored under another prefix, or stored again after an
// eviction, keeps its past. The prefix-tree node is used only for the subtree term.
//
// Three terms, each normalised to [0, 1]:
//  - temporal: recency and frequency of the content's use, an LRU and an LFU signal mixed:
//      recency = 2^(-(now - last use) / recency_half_life_s)
//      frequency = c / (c + frequency_half_saturation), c = use count decayed with
//                  frequency_half_life_s
//      temporal = recency_share * recency + (1 - recency_share) * frequency
//  - spatial: the chunk sits where recent requests were: its `document` (same document, same
//    conversation) was used recently, or its parent node in the prefix tree was (the parent's
//    recency divided by the number of children seen under it, so that a root every prompt
//    shares, e.g. the system prompt, does not make all its children look hot):
//      spatial = max(recency of the document, recency of the parent / parent's children)
//  - semantic: co-access. Contents used by the same request are linked with a decayed count;
//    a chunk is likely when a content it travels with was used recently:
//      semantic = max over linked n of  k_cn / (c_n + co_access_prior) * recency(n)
//    k_cn the decayed count of requests that used both, c_n the decayed use count of n: the
//    confidence of "n is used -> c is used", smoothed (one joint use gives 0.5). A hub used
//    by every request (a system prompt) thus lends little to each chunk used beside it.
// Score = (ws * spatial + wt * temporal + wm * semantic) / (ws + wt + wm), in [0, 1].
//
// Memory is bounded: each content keeps at most max_co_access_per_chunk links (the highest
// decayed counts; a new link displaces the weakest only when that one has decayed below a
// fresh link's count); Forget drops a node (and its history when it has no content hash),
// ForgetContent a content's history; and every 256 requests a sweep drops documents and
// nodes idle for 40 recency half-lives, contents idle for 40 frequency half-lives, and the
// stalest contents beyond max_tracked_contents.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace reprise::store {

// A chunk as the cache policies see it: a node of the prefix tree with its size and state.
struct ChunkInfo {
  uint64_t id = 0;
  uint64_t parent = 0;    // parent node in the prefix tree; 0 = the root
  uint64_t document = 0;  // spatial group: same document / prefix subtree; 0 = none
  uint64_t content = 0;   // content hash (equal texts, equal hashes); 0 = unknown: use id
  int num_tokens = 0;
  int64_t bytes = 0;
  bool exact = false;   // prefix-reusable: its KV equals a full prefill of its path
  bool pinned = false;  // in use by a running request; never evicted
  bool in_pool = false;
};

struct LocalityOptions {
  // Weights of the three terms (>= 0, not all 0). Defaults: temporal carries half the score
  // because a content's own history is the most direct evidence (it alone is what LRU/LFU
  // use); spatial and semantic share the other half as evidence about chunks not yet
  // re-used (a conversation or document in progress, a chunk that travels with another).
  double weight_spatial = 0.25;
  double weight_temporal = 0.5;
  double weight_semantic = 0.25;
  // Recency of contents, nodes and documents halves every recency_half_life_s (e.g. 10
  // minutes: a user's session of questions).
  double recency_half_life_s = 600;
  // Use and co-access counts halve every frequency_half_life_s (longer than recency: LFU
  // remembers what LRU forgets).
  double frequency_half_life_s = 3600;
  // temporal = share * recency + (1 - share) * frequency. Mostly recency: a frequency term
  // holds back chunks just stored (count 1) against old popular ones, and in the eviction
  // ablation 0.75 beat 0.5 slightly on both workloads while pure frequency lost badly.
  double recency_share = 0.75;
  double frequency_half_saturation = 1.0;  // a decayed count of 1 maps to 0.5
  double co_access_prior = 1.0;            // added to c_n in the semantic confidence
  int max_co_access_per_chunk = 32;
  // Co-access is quadratic in the chunks of one request: only the first ones are linked.
  int max_linked_chunks_per_request = 64;
  int64_t max_tracked_contents = 1 << 20;
};

// The three terms of a chunk's score, each in [0, 1].
struct LocalityTerms {
  double spatial = 0;
  double temporal = 0;
  double semantic = 0;
};

// Thread-compatible: the store serialises calls (its scheduler thread owns it).
class LocalityModel {
 public:
  // Errors: InvalidArgument for negative or all-zero weights, non-positive half-lives,
  // saturation or prior, recency_share outside [0, 1], or non-positive limits.
  static Result<LocalityModel> Create(const LocalityOptions& options);

  // Records one request: the chunks it used (hit, reused or newly stored), in prompt order.
  // A content or node used twice counts once. Time is expected to be non-decreasing; an
  // earlier `now_s` is treated as the latest time seen.
  void RecordRequest(std::span<const ChunkInfo> chunks_used_in_order, double now_s);

  // Drops the prefix-tree node `id` (the store removed it from every tier), and the history
  // keyed by `id` when the node was recorded without a content hash. The history of a content
  // hash survives the node: the text may be stored again (see ForgetContent).
  void Forget(uint64_t id);
  // Drops the history of a content hash (and its co-access links).
  void ForgetContent(uint64_t content);

  LocalityTerms Terms(const ChunkInfo& chunk, double now_s) const;
  // The weighted score, in [0, 1].
  double Score(const ChunkInfo& chunk, double now_s) const;
  // The prefetch signal: (ws * spatial + wm * semantic) / (ws + wm), in [0, 1]; 0 when both
  // weights are 0.
  double PrefetchScore(const ChunkInfo& chunk, double now_s) const;
  // The chunk's normalised use frequency, c / (c + k) in [0, 1]: the likelihood factor of
  // future hits the flash eviction cost weighs descendants by.
  double HitFrequency(const ChunkInfo& chunk, double now_s) const;

  const LocalityOptions& options() const { return options_; }
  size_t num_tracked_contents() const { return contents_.size(); }
  size_t num_tracked_nodes() const { return nodes_.size(); }
  size_t num_tracked_documents() const { return documents_.size(); }
  size_t num_co_access_links() const;  // summed over contents

 private:
  struct CoAccess {
    uint64_t other = 0;  // a content key
    double count = 0;    // as of `updated_s`
    double updated_s = 0;
  };
  struct ContentStats {
    double last_use_s = 0;
    double count = 0;             // decayed use count as of last_use_s
    std::vector<CoAccess> links;  // at most max_co_access_per_chunk
  };
  struct NodeStats {
    uint64_t parent = 0;
    uint64_t key = 0;  // the content key it was recorded with
    double last_use_s = 0;
    int num_children = 0;  // distinct children recorded under this node
  };

  explicit LocalityModel(const LocalityOptions& options) : options_(options) {}

  static uint64_t Key(const ChunkInfo& chunk) {
    return chunk.content != 0 ? chunk.content : chunk.id;
  }
  double Recency(double last_use_s, double now_s) const;
  double DecayedCount(double count, double since_s, double now_s) const;
  void Link(ContentStats& stats, uint64_t other, double now_s);
  void Sweep(double now_s);

  LocalityOptions options_;
  double latest_s_ = 0;
  int64_t num_requests_ = 0;
  std::unordered_map<uint64_t, ContentStats> contents_;
  std::unordered_map<uint64_t, NodeStats> nodes_;
  std::unordered_map<uint64_t, double> documents_;  // document -> last use, seconds
};

}  // namespace reprise::store
