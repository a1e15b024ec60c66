// RemoteTier: a key-value store shared by several Reprise servers (docs/design.md §6), behind
// the memory pool and the flash tier. The store writes each chunk it persists there too (its
// KV file bytes, kv_file.h, which carry the chunk's checksums, namespace, ids, provenance and
// model fingerprint) and asks it for chunks that miss memory and flash. RedisTier
// (redis_tier.h) implements it on Redis.
//
// The remote side is never trusted: what Get returns is only bytes, and the store checks them
// as it checks a file on flash (ChunkStore::FetchRemote) before anything uses them. And it is
// never waited for: an operation gives up after the tier's timeout, and a tier that failed
// answers Unavailable at once until its backoff has passed, so a slow, stopped or full server
// makes lookups miss, never fail or stall.
//
// Keys (RemoteChunkKey, RemoteContentKey) carry the namespace in a Redis Cluster hash tag
// (`{ns}`), so that one namespace's keys live on one node, and a per-tenant ACL can grant a
// key pattern (docs/serving.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kv/chunk.h"
#include "reprise/defaults.h"

namespace reprise::store {

struct RemoteOptions {
  // redis://[user:password@]host:port[/db]; empty: no remote tier.
  std::string url;
  // Used when the URL has none (the cli reads it from REPRISE_REDIS_PASSWORD).
  std::string password;
  // The longest wait for the server to connect or to make progress on one operation. A large
  // value keeps flowing past it; a server that stops answering does not.
  int timeout_ms = kDefaultRemoteTimeoutMs;
  // Entries expire this long after they were written; 0: never (the server's eviction policy
  // alone decides).
  int64_t ttl_seconds = kDefaultRemoteTtlSeconds;
  // Connections opened at most (each used by one operation at a time); an operation that
  // finds them all busy misses rather than waits.
  int max_connections = 4;
  // After a failure, the tier answers Unavailable at once for this long, doubling on each
  // further failure up to backoff_max_ms; a success resets it.
  int backoff_initial_ms = 100;
  int backoff_max_ms = 2000;
};

// Checks the numbers of `options` (not the URL: RedisTier::Create parses it). Errors:
// InvalidArgument.
Status ValidateRemoteOptions(const RemoteOptions& options);

// This process's counters of a remote tier.
struct RemoteTierStats {
  int64_t gets = 0;        // Get calls
  int64_t found = 0;       // ... that returned a value
  int64_t absent = 0;      // ... that found no value under the key
  int64_t unavailable = 0; // ... and Put calls that gave up: down, timed out, backing off, busy
  int64_t puts = 0;        // values written
  int64_t put_refused = 0; // values the server refused (full: maxmemory with noeviction)
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t connects = 0;    // connections opened (the first and every reconnection)
  bool connected = false;  // a connection was usable after the last operation
};

// One value to write.
struct RemotePut {
  std::string key;
  std::string_view value;
  // Write only where the key holds nothing (SET NX): approximate KV never replaces a value.
  bool only_if_absent = false;
};

class RemoteTier {
 public:
  virtual ~RemoteTier() = default;
  // The value under `key`, or nullopt when there is none. Errors: Unavailable (the server is
  // down, did not answer within the timeout, refused the command, or the tier is backing off
  // or busy).
  virtual Result<std::optional<std::string>> Get(const std::string& key) = 0;
  // Writes the values (pipelined), each with the TTL. Errors: Unavailable as Get;
  // ResourceExhausted when the server refused some (out of memory), the others written.
  virtual Status Put(std::span<const RemotePut> puts) = 0;
  virtual RemoteTierStats Stats() = 0;
  // The server's address, without credentials (for logs and reports).
  virtual std::string Describe() const = 0;
};

// The key of a chunk's KV file bytes: `reprise:{<ns>}:kv:<model fingerprint>:<chunk id>`, the
// numbers in hex, the namespace with `%`, `{`, `}`, `:` and bytes outside printable ASCII
// escaped as %XX (so that no two namespaces share a key or a hash tag's end).
std::string RemoteChunkKey(std::string_view name_space, uint64_t model_fingerprint,
                           kv::ChunkId chunk_id);
// The key of the chunk id that holds a content hash: `reprise:{<ns>}:content:<fp>:<hash>`.
std::string RemoteContentKey(std::string_view name_space, uint64_t model_fingerprint,
                             kv::ContentHash content);
// The key pattern of a namespace's entries, `reprise:{<ns>}:*` (for an ACL rule).
std::string RemoteNamespacePattern(std::string_view name_space);

// A chunk id as stored under a content key (16 hex digits), and back (nullopt unless exactly
// that).
std::string EncodeRemoteChunkId(kv::ChunkId id);
std::optional<kv::ChunkId> DecodeRemoteChunkId(std::string_view value);

}  // namespace reprise::store
