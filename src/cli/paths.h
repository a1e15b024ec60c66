// Where the command line finds things: the shared data folder, the user's cache folder, the
// remote tier's password.
// The only place that reads the environment (docs/style.md §5).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace reprise::cli {

// $REPRISE_DATA_DIR, else ../shared/data next to the checkout the program was built in,
// else ../shared/data from the working directory; nullopt when none exists.
std::optional<std::string> FindSharedDataDir();

// The user's cache folder, created (mode 0700) when missing: $XDG_CACHE_HOME/reprise, else
// ~/.cache/reprise ($HOME, else the password database's home), else
// $XDG_RUNTIME_DIR/reprise (store::ChooseCacheDir). Never a predictable /tmp path.
// Errors: Unavailable (no home and no runtime folder: the message says what to set), and
// those of creating it.
Result<std::string> FindCacheDir();

// The environment variable that may hold the remote tier's Redis password.
inline constexpr const char* kRedisPasswordVariable = "REPRISE_REDIS_PASSWORD";
// Its value, when set.
std::optional<std::string> RedisPasswordFromEnvironment();

}  // namespace reprise::cli
