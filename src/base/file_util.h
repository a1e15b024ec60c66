// Whole-file helpers: read a file into memory, write one atomically.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace reprise {

// Reads the whole file. Errors: NotFound, IoError.
Result<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path` by way of a temporary file in the same folder, fsync and rename,
// so that readers see the old file or the new one, never a torn one. Errors: IoError,
// ResourceExhausted (disk full).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Creates `path` and its parents (mode 0700 for the folders created). Ok if it exists.
Status CreateDirectories(const std::string& path);

}  // namespace reprise
