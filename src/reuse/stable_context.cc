#include "reuse/stable_context.h"

#include <algorithm>
#include <unordered_map>

namespace reprise::reuse {
namespace {

// The cached context of a reused token: the tokens of its source chunk's ancestors, root
// first, then the source's own before the token — pieces of the entries' tokens, which the
// lookup's memo keeps alive.
class CachedContext {
 public:
  // False when a chunk of the chain is not in the index, or the chain is longer than
  // kMaxContextChunks.
  bool Build(const kv::ChunkEntry& source, int offset,
             const std::function<const kv::ChunkEntry*(kv::ChunkId)>& entry_of) {
    pieces_.clear();
    size_ = 0;
    Add(std::span<const int32_t>(source.tokens.data(), static_cast<size_t>(offset)));
    kv::ChunkId id = source.parent;
    for (int hops = 0; id != kv::kRootChunkId; ++hops) {
      const kv::ChunkEntry* entry = hops < kMaxContextChunks ? entry_of(id) : nullptr;
      if (entry == nullptr) return false;
      Add(entry->tokens);
      id = entry->parent;
    }
    std::reverse(pieces_.begin(), pieces_.end());
    return true;
  }

  size_t size() const { return size_; }

  // How many of prompt[0, end)'s last tokens are, in order, the context's last.
  int CommonSuffix(std::span<const int32_t> prompt, int end) const {
    int matched = 0;
    for (auto piece = pieces_.rbegin(); piece != pieces_.rend(); ++piece) {
      for (auto token = piece->rbegin(); token != piece->rend(); ++token) {
        if (matched == end || prompt[static_cast<size_t>(end - matched - 1)] != *token) {
          return matched;
        }
        ++matched;
      }
    }
    return matched;
  }

  // Whether prompt[0, count) are the context's first `count` tokens. Requires: count <= size().
  bool StartsLike(std::span<const int32_t> prompt, size_t count) const {
    size_t compared = 0;
    for (const std::span<const int32_t> piece : pieces_) {
      const size_t take = std::min(piece.size(), count - compared);
      if (!std::equal(piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(take),
                      prompt.begin() + static_cast<std::ptrdiff_t>(compared))) {
        return false;
      }
      compared += take;
      if (compared == count) return true;
    }
    return compared == count;
  }

 private:
  void Add(std::span<const int32_t> tokens) {
    pieces_.push_back(tokens);
    size_ += tokens.size();
  }

  std::vector<std::span<const int32_t>> pieces_;  // last piece first until Build reverses
  size_t size_ = 0;
};

}  // namespace

std::vector<int> StableContextLengths(std::span<const int32_t> prompt, const ReusePlan& plan,
                                      const EntryLookup& lookup, std::vector<int>* deleted_tokens) {
  // The chains of one prompt's sources share most of their ancestors: each is looked up once,
  // and kept alive while the contexts point into its tokens.
  std::unordered_map<kv::ChunkId, std::shared_ptr<const kv::ChunkEntry>> known;
  const std::function<const kv::ChunkEntry*(kv::ChunkId)> entry_of =
      [&](kv::ChunkId id) -> const kv::ChunkEntry* {
    auto it = known.find(id);
    if (it == known.end()) it = known.emplace(id, lookup ? lookup(id) : nullptr).first;
    return it->second.get();
  };
  const size_t n = std::min(plan.tokens.size(), prompt.size());
  std::vector<int> lengths(plan.tokens.size(), -1);
  // Of each reused token: whether the prompt before it is its cached context with at most one
  // block deleted, and its common suffix with that context.
  std::vector<uint8_t> aligned(n, 0);
  std::vector<int> suffix(n, 0);
  std::vector<int> deleted(plan.tokens.size(), 0);
  CachedContext context;
  for (size_t i = 0; i < n; ++i) {
    const TokenSource& t = plan.tokens[i];
    if (t.kind == TokenKind::kPrefix) {
      lengths[i] = static_cast<int>(i);
      continue;
    }
    if (t.kind != TokenKind::kNonPrefix || t.source < 0) continue;
    const kv::ChunkEntry& source = *plan.sources[static_cast<size_t>(t.source)];
    if (i > 0 && plan.tokens[i - 1].kind == TokenKind::kNonPrefix &&
        plan.tokens[i - 1].source >= 0) {
      // The token before it is the one it followed when cached (the same chunk's previous
      // token, or the last token of its parent chunk): its context is that token's, one token
      // longer, and is judged alike.
      const TokenSource& before = plan.tokens[i - 1];
      const kv::ChunkEntry& previous = *plan.sources[static_cast<size_t>(before.source)];
      const bool same_chunk = previous.id == source.id && before.source_token + 1 == t.source_token;
      const bool parent_chunk = t.source_token == 0 && source.parent == previous.id &&
                                before.source_token + 1 == static_cast<int>(previous.tokens.size());
      if (same_chunk || parent_chunk) {
        aligned[i] = aligned[i - 1];
        suffix[i] = suffix[i - 1] + 1;
        deleted[i] = deleted[i - 1];
        continue;
      }
    }
    if (!lookup || !context.Build(source, t.source_token, entry_of)) continue;
    // Nothing inserted (the context is at least as long as the prompt before it), its last
    // tokens in the prompt right before it, and the rest of the prompt before those is the
    // context's start: the context with the block between deleted.
    if (context.size() < i) continue;
    const int common = context.CommonSuffix(prompt, static_cast<int>(i));
    if (!context.StartsLike(prompt, i - static_cast<size_t>(common))) continue;
    aligned[i] = 1;
    suffix[i] = common;
    deleted[i] = static_cast<int>(context.size() - i);
  }
  // A reused token is of stable context only when every reused token after it is too: the
  // prompt is a moved window of cached text (new text may follow), not pieces put together.
  bool later_aligned = true;
  for (size_t i = n; i-- > 0;) {
    if (plan.tokens[i].kind != TokenKind::kNonPrefix) continue;
    later_aligned = later_aligned && aligned[i] != 0;
    lengths[i] = later_aligned ? suffix[i] : -1;
  }
  if (deleted_tokens != nullptr) *deleted_tokens = std::move(deleted);
  return lengths;
}

}  // namespace reprise::reuse
