// Stable context: which reused tokens kept their cached context but for a deleted block.
//
// A reused token's KV was computed after some tokens (its cached context). In a chat whose
// window dropped its oldest turn, the history after the cut is its cached context minus the
// dropped turn: everything before it (the system prompt) and after it is in place, so its KV
// deviates from a fresh one little, and least for tokens far from the cut. A document in a
// new order lost its cached neighbours and gained others. Blend's adaptive recompute lets the
// first kind keep their cached KV unless their measured deviation is material
// (graph::kRowStableContext), while the second kind is selected as always.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "kv/chunk.h"
#include "reuse/reuse_planner.h"

namespace reprise::reuse {

// A cached chunk's parent and content, or nullopt when the cache does not know it
// (kv::ChunkCache::LinkOf).
using LinkLookup = std::function<std::optional<kv::ChunkLink>(kv::ChunkId id)>;

// How many chunks may lie between a reused run and the tokens it now follows in its cached
// chain: a chunk is often found in the chain of the request that computed it exactly, deep in
// a long conversation, so the walk goes as far as a context of chunks reaches.
inline constexpr int kMaxDeletedChunks = 1024;

// For each prompt token of `plan`: when its context is its cached context with at most a
// deleted block of chunks (kMaxDeletedChunks) between it and what now comes before it, how
// many tokens right before it are, in order, those it followed when cached (a prefix token:
// all before it; a reused token: one more than the token before it when that token is its
// cached predecessor — the previous token of its source chunk, or for a chunk's first token
// the last token of the chunk's parent — and 0 at a deletion); else -1 (new tokens, and
// reused tokens whose context changed otherwise, as a document in a new order). Chunks are
// compared by content: the same text cached in two conversations' chains is the same
// predecessor, and a prompt chunk computed anew (`chunks`: the prompt's chunks, e.g. one too
// short to reuse at a new position) stands in place when its content is the one the next
// reused chunk followed. New tokens get the count they would have in place (they are
// recomputed anyway).
std::vector<int> StableContextLengths(const ReusePlan& plan, std::span<const PromptChunk> chunks,
                                      const LinkLookup& link_of);

}  // namespace reprise::reuse
