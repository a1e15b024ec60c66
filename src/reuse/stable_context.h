// Stable context: which reused tokens kept their cached context but for one deleted block.
//
// A reused token's KV was computed after some tokens: its cached context, the tokens of its
// source chunk's chain (its ancestors' tokens, then the chunk's own before it). In a chat
// whose window dropped its oldest turns, the history after the cut is its cached context
// minus the dropped turns: the system prompt before the cut and everything after it are in
// place, so its KV deviates from a fresh one little, and least far from the cut. A document in
// a new order lost its cached neighbours and gained others; a substitution or an insertion
// changed the context. Blend keeps the first kind's cached KV where it is far enough from the
// cut (reuse_session.h, ReuseOptions::stable_context_tokens), while every other reused token
// is selected as always.
//
// Decided on tokens, never on chunk boundaries or links: the prompt's tokens are compared with
// the cached context's (the chain's tokens are in the cache's index, ChunkCache::Peek), so a
// dropped turn inside a chunk, content-defined boundaries that shifted, and a plain-text
// prompt are judged as a chat in messages is.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kv/chunk.h"
#include "reuse/reuse_planner.h"

namespace reprise::reuse {

// A cached chunk's entry from the index (its parent and tokens; its KV is not read), or null
// when the cache does not hold it (kv::ChunkCache::Peek).
using EntryLookup = std::function<std::shared_ptr<const kv::ChunkEntry>(kv::ChunkId id)>;

// The most chunks a cached context is walked through: a context of chunks reaches as far as
// a model's context does.
inline constexpr int kMaxContextChunks = 1 << 14;

// For each token of `prompt` (planned by `plan`):
//  - a prefix token: its index (everything before it is in place);
//  - a reused (non-prefix) token: how many tokens right before it in the prompt are, in order,
//    the last tokens of its cached context — when the prompt before it is that context with
//    at most one contiguous block deleted (the prompt's first tokens are the context's first,
//    its last ones the context's last, and nothing was inserted or substituted) and every
//    reused token after it is of such a context too (the prompt is a moved window of cached
//    text, new text after it; a document reused before another reused at a new position is
//    in a new order); else -1;
//  - a new token: -1 (it is computed anyway).
// So a chat history after a dropped turn counts from the cut (0 right after it), and in place
// a reused token counts its whole index. Without `entry_of` (or where a context's chunk is not
// in the index) a reused token's context cannot be checked: -1.
// Requires: plan.tokens.size() == prompt.size(); the plan's reused tokens equal their
// sources' tokens.
std::vector<int> StableContextLengths(std::span<const int32_t> prompt, const ReusePlan& plan,
                                      const EntryLookup& entry_of,
                                      std::vector<int>* deleted_tokens = nullptr);

}  // namespace reprise::reuse
