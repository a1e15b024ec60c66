// Where the command line finds things: the shared data folder and the user's cache folder.
// The only place that reads the environment (STYLE.md §5).
#pragma once

#include <optional>
#include <string>

namespace reprise::cli {

// $REPRISE_DATA_DIR, else ../shared/data next to the checkout the program was built in,
// else ../shared/data from the working directory; nullopt when none exists.
std::optional<std::string> FindSharedDataDir();

// $XDG_CACHE_HOME/reprise or ~/.cache/reprise (created, mode 0700).
std::string CacheDir();

}  // namespace reprise::cli
