// RedisTier: the remote tier (remote_tier.h) on a Redis server, through hiredis.
//
// The URL is redis://[user:password@]host:port[/db] (the user and password percent-decoded; a
// password given apart, RemoteOptions::password, is used when the URL has none). Nothing is
// connected at Create: the first operation connects, so a server that is down at start only
// makes lookups miss.
//
// Every operation takes a connection of its own from a small pool (RemoteOptions::
// max_connections), runs with the socket timeout set to RemoteOptions::timeout_ms (connect,
// and each wait for the server to make progress), and on any I/O error or timeout drops the
// connection and every idle one, and backs off: for backoff_initial_ms, doubling up to
// backoff_max_ms, every operation answers Unavailable without touching the network; then the
// next one reconnects. An error reply (out of memory, no permission) is the server's answer,
// not a failure of the connection. Writes to a closed socket never raise SIGPIPE in the
// process: it is blocked on the calling thread for the call and any pending one consumed.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "store/remote_tier.h"

struct redisContext;

namespace reprise::store {

struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;  // empty: the default user
  std::string password;
};

// Parses redis://[user:password@]host[:port][/db] (host may be [IPv6]). Errors:
// InvalidArgument saying what is wrong (never echoing the password).
Result<RedisUrl> ParseRedisUrl(std::string_view url);

class RedisTier final : public RemoteTier {
 public:
  // Errors: InvalidArgument (the URL, ValidateRemoteOptions).
  static Result<std::unique_ptr<RedisTier>> Create(const RemoteOptions& options);
  ~RedisTier() override;
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  Result<std::optional<std::string>> Get(const std::string& key) override;
  Status Put(std::span<const RemotePut> puts) override;
  RemoteTierStats Stats() override;
  std::string Describe() const override;

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const;
  };
  using Context = std::unique_ptr<redisContext, ContextDeleter>;
  using Clock = std::chrono::steady_clock;

  RedisTier(const RemoteOptions& options, RedisUrl url) : options_(options), url_(std::move(url)) {}
  // A connection for one operation: an idle one, or a new one connected now. Errors:
  // Unavailable (backing off, all busy, the connection failed: then backing off).
  Result<Context> Acquire();
  // Gives a connection back after an operation: kept when `healthy`, else dropped (with every
  // idle one) and the tier backs off.
  void Release(Context context, bool healthy);
  // Connects, authenticates and selects the database. Errors: Unavailable.
  Result<Context> Connect();

  const RemoteOptions options_;
  const RedisUrl url_;
  Mutex mutex_;
  std::vector<Context> idle_ REPRISE_GUARDED_BY(mutex_);
  int open_ REPRISE_GUARDED_BY(mutex_) = 0;  // idle and in use
  Clock::time_point retry_at_ REPRISE_GUARDED_BY(mutex_);
  int backoff_ms_ REPRISE_GUARDED_BY(mutex_) = 0;  // the next backoff's length
  RemoteTierStats stats_ REPRISE_GUARDED_BY(mutex_);
};

}  // namespace reprise::store
