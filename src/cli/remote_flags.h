// --remote URL, --remote-timeout-ms and --remote-ttl-s: the store's remote tier, a Redis shared
// by several servers (reprise::EngineOptions::store_remote), shared by run, serve and
// `bench reuse`. The password comes from REPRISE_REDIS_PASSWORD when the URL has none, so that
// it need not appear on a command line.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "reprise/defaults.h"
#include "reprise/engine.h"

namespace reprise::cli {

inline constexpr const char* kRedisPasswordVariable = "REPRISE_REDIS_PASSWORD";

struct RemoteFlags {
  std::string url;
  int timeout_ms = kDefaultRemoteTimeoutMs;
  int64_t ttl_s = kDefaultRemoteTtlSeconds;

  void Register(CLI::App& sub);
  // Sets `options`' remote fields (the password from the environment).
  void Apply(EngineOptions& options) const;
};

}  // namespace reprise::cli
