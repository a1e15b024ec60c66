#include "cli/remote_flags.h"

#include <cstdlib>

#include "cli/option_checks.h"

namespace reprise::cli {

void RemoteFlags::Register(CLI::App& sub) {
  sub.add_option("--remote", url,
                 "Share KV with other servers through this Redis: redis://[user:password@]"
                 "host:port[/db] (needs a store; the password may come from " +
                     std::string(kRedisPasswordVariable) + ")");
  sub.add_option("--remote-timeout-ms", timeout_ms,
                 "--remote: each remote operation gives up after this (the request goes on "
                 "with its local tiers)")
      ->default_val(kDefaultRemoteTimeoutMs)
      ->check(IntegerIn(1, 60000));
  sub.add_option("--remote-ttl-s", ttl_s, "--remote: entries expire after this; 0 = never")
      ->default_val(kDefaultRemoteTtlSeconds)
      ->check(CLI::Range(int64_t{0}, int64_t{10} * 365 * 24 * 3600));
}

void RemoteFlags::Apply(EngineOptions& options) const {
  options.store_remote = url;
  options.store_remote_timeout_ms = timeout_ms;
  options.store_remote_ttl_s = ttl_s;
  if (const char* password = std::getenv(kRedisPasswordVariable); password != nullptr) {
    options.store_remote_password = password;
  }
}

}  // namespace reprise::cli
