// PoolTextIndex: a small in-memory keyword index over the text of the memory pool's chunks
// that the catalog does not hold yet (waiting for write-back, or kept in memory only), so
// that a text search for reusable chunks (ChunkStore::FindCandidates) finds a chunk the
// moment it is inserted rather than when the write-back thread has caught up.
//
// Why in memory and not a synchronous catalog insert: Insert runs on the request's path,
// where the store does no I/O (DESIGN.md §6, lazy write-back); an SQLite transaction there
// would cost a WAL append and contend with the write-back thread's batches. The chunks this
// index holds are few (the write-back queue), so a hash map of words is enough.
//
// Words are split exactly as the catalog's keyword index counts them (SplitQueryWords,
// text_query.h) and scored the same way: the sum of the BM25 IDFs,
// ln(1 + (N - df + 0.5) / (df + 0.5)), of the query's distinct words a chunk holds, N and df
// counted over this index. Results are ordered by score, then chunk id, so they depend only
// on what is indexed.
//
// Thread-compatible (MemoryPool uses it under the store's pool lock).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/chunk.h"
#include "store/pool_key.h"

namespace reprise::store {

class PoolTextIndex {
 public:
  // Indexes `text` under `key`, replacing what the key had. Empty text indexes nothing.
  void Add(const PoolKey& key, std::string_view text);
  // Forgets `key`; nothing when it is not indexed.
  void Remove(const PoolKey& key);

  // The chunks of `name_space` sharing words with `query`, best first, at most
  // `max_results`.
  std::vector<kv::ChunkId> Search(std::string_view name_space, std::string_view query,
                                  int max_results) const;

  bool Contains(const PoolKey& key) const { return words_of_.contains(key); }
  int num_texts() const { return static_cast<int>(words_of_.size()); }

 private:
  std::unordered_map<PoolKey, std::vector<std::string>, PoolKeyHash> words_of_;
  std::unordered_map<std::string, std::unordered_set<PoolKey, PoolKeyHash>> postings_;
};

}  // namespace reprise::store
