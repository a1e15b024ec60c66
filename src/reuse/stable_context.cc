#include "reuse/stable_context.h"

#include <algorithm>
#include <unordered_map>

namespace reprise::reuse {
namespace {

// Whether `chunk` is the cached successor of a chunk with id `id` or content `content`.
bool IsParent(const kv::ChunkEntry& chunk, kv::ChunkId id, kv::ContentHash content,
              const LinkLookup& link_of) {
  if (chunk.parent == id && id != kv::kRootChunkId) return true;
  if (!link_of || chunk.parent == kv::kRootChunkId) return false;
  const std::optional<kv::ChunkLink> parent = link_of(chunk.parent);
  return parent && parent->content == content;
}

// Whether a chunk with id `id` or content `content` is a strict ancestor of `chunk`'s parent
// within kMaxDeletedChunks hops: `chunk` followed it when cached, with the chunks between now
// deleted. One lookup per hop.
bool FollowsAfterDeletion(const kv::ChunkEntry& chunk, kv::ChunkId id, kv::ContentHash content,
                          const LinkLookup& link_of) {
  if (!link_of || chunk.parent == kv::kRootChunkId) return false;
  std::optional<kv::ChunkLink> link = link_of(chunk.parent);
  for (int hop = 0; hop < kMaxDeletedChunks && link; ++hop) {
    const kv::ChunkId parent = link->parent;
    if (parent == kv::kRootChunkId) return false;
    if (parent == id) return true;
    link = link_of(parent);
    if (link && link->content == content) return true;
  }
  return false;
}

}  // namespace

std::vector<int> StableContextLengths(const ReusePlan& plan, std::span<const PromptChunk> chunks,
                                      const LinkLookup& lookup) {
  // The chains of one prompt's sources share most of their ancestors: each is looked up once.
  std::unordered_map<kv::ChunkId, std::optional<kv::ChunkLink>> known;
  LinkLookup link_of;
  if (lookup) {
    link_of = [&](kv::ChunkId id) {
      auto it = known.find(id);
      if (it == known.end()) it = known.emplace(id, lookup(id)).first;
      return it->second;
    };
  }
  const size_t n = plan.tokens.size();
  std::vector<int> lengths(n, -1);
  size_t chunk = 0;  // the prompt chunk holding token i - 1
  for (size_t i = 0; i < n; ++i) {
    const TokenSource& t = plan.tokens[i];
    if (t.kind == TokenKind::kPrefix) {
      lengths[i] = static_cast<int>(i);
      continue;
    }
    if (i == 0 || lengths[i - 1] < 0) continue;
    if (t.kind == TokenKind::kNew) {
      lengths[i] = lengths[i - 1] + 1;
      continue;
    }
    if (t.source < 0) continue;
    const kv::ChunkEntry& source = *plan.sources[static_cast<size_t>(t.source)];
    const TokenSource& before = plan.tokens[i - 1];
    if (before.kind == TokenKind::kNew) {
      // After tokens computed anew: in place when they end a prompt chunk whose content is
      // that of the chunk this one followed when cached.
      while (chunk < chunks.size() && chunks[chunk].end < static_cast<int>(i)) ++chunk;
      if (t.source_token == 0 && chunk < chunks.size() &&
          chunks[chunk].end == static_cast<int>(i) &&
          IsParent(source, kv::kRootChunkId, chunks[chunk].content, link_of)) {
        lengths[i] = lengths[i - 1] + 1;
      }
      continue;
    }
    if (before.source < 0) continue;
    const kv::ChunkEntry& previous = *plan.sources[static_cast<size_t>(before.source)];
    const bool same_chunk = previous.id == source.id || previous.content == source.content;
    if (t.source_token > 0) {
      if (same_chunk && before.source_token == t.source_token - 1) {
        lengths[i] = lengths[i - 1] + 1;
        continue;
      }
      // The chunk's first tokens stand before it as when cached, though taken from another
      // chunk that begins the same way (a prefix that ran into the first chunk that missed,
      // e.g. a turn header): the deletion, if any, lies before them.
      if (before.source_token != t.source_token - 1 ||
          !std::equal(previous.tokens.begin(), previous.tokens.begin() + before.source_token + 1,
                      source.tokens.begin())) {
        continue;
      }
      if (previous.parent == source.parent) {
        lengths[i] = t.source_token;
        continue;
      }
      const std::optional<kv::ChunkLink> above =
          link_of && previous.parent != kv::kRootChunkId ? link_of(previous.parent) : std::nullopt;
      if (above && (IsParent(source, previous.parent, above->content, link_of) ||
                    FollowsAfterDeletion(source, previous.parent, above->content, link_of))) {
        lengths[i] = t.source_token;
      }
      continue;
    }
    if (before.source_token + 1 != static_cast<int>(previous.tokens.size())) continue;
    if (IsParent(source, previous.id, previous.content, link_of)) {
      lengths[i] = lengths[i - 1] + 1;
    } else if (FollowsAfterDeletion(source, previous.id, previous.content, link_of)) {
      lengths[i] = 0;
    }
  }
  return lengths;
}

}  // namespace reprise::reuse
