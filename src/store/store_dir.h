// Store folder hygiene: who may own and read the store's folder and catalog (docs/design.md §6).
// The catalog holds the prompts' text in plain and the KV files their tensors, so the folder
// is private to its user:
//  - the folder must be a real folder (a symlink is refused, never followed), owned by the
//    process's effective user; mode 0700 (a folder we own with wider bits is fixed, with a
//    warning from the caller);
//  - catalog.db and its -wal / -shm are 0600. SQLite gives its -wal and -shm the mode of the
//    database file, so the catalog file is created 0600 before SQLite first opens it, and
//    existing ones are narrowed.
//
// POSIX calls on real paths (not the FileSystem seam: these are properties of the real
// folder). Thread-safe.
#pragma once

#include <string>

#include "base/status.h"

namespace reprise::store {

struct StoreDirCheck {
  bool mode_fixed = false;  // the folder had group/other bits, now 0700
};

// Checks `dir` (which must exist). `fix_mode`: narrow a folder of ours to 0700 (else a
// readable folder is only reported back in the result). Errors: InvalidArgument (a symlink or
// not a folder), Unavailable (owned by another user), IoError.
Result<StoreDirCheck> CheckStoreDir(const std::string& dir, bool fix_mode);

// Where to find things for choosing a user's cache folder (the caller reads the environment;
// docs/style.md §5). Empty = unset.
struct CacheDirSources {
  std::string xdg_cache_home;
  std::string home;
  std::string passwd_home;  // the user's home folder from the password database
  std::string xdg_runtime_dir;
};

// The user's cache folder (the default store is `<it>/store`): $XDG_CACHE_HOME/reprise, else
// $HOME/.cache/reprise, else <passwd home>/.cache/reprise, else $XDG_RUNTIME_DIR/reprise —
// never a shared, predictable folder such as /tmp. Relative values are ignored (the XDG spec
// says so). Errors: Unavailable, with a message saying what to set, when none is usable.
Result<std::string> ChooseCacheDir(const CacheDirSources& sources);

// Creates `dir`/catalog.db (empty, 0600) when missing, and narrows catalog.db, -wal and -shm
// of ours to 0600. Never follows symlinks. Errors: InvalidArgument (a symlink or not a regular
// file), Unavailable (another user's file, or a read-only folder), IoError.
Status PrepareCatalogFiles(const std::string& dir);

// Asks the kernel to drop the page cache of every KV file in `dir` (posix_fadvise
// DONTNEED), so that the next reads of them touch storage — for benchmarks that measure KV
// coming from flash. Files being written are skipped by the kernel (dirty pages stay);
// flush the store first. Returns how many files were advised. Errors: IoError (the folder).
Result<int> DropKvFilePages(const std::string& dir);

}  // namespace reprise::store
