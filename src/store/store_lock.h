// StoreLock: the advisory lock (flock(2) on `<store>/lock`) that lets several processes share
// one store folder (docs/design.md §6).
//
// Protocol: every process that writes the store holds the lock SHARED for as long as it has
// the store open, so any number of them can write, read and evict side by side (SQLite
// serialises their catalog transactions; each writes its files under temporary names of its
// own). Deleting temporaries and orphan files — recovery, at open and in gc — needs the lock
// EXCLUSIVE, which is only granted when no other process has the store open: a live
// process's temporary, or its file renamed but not yet in the catalog, looks exactly like a
// crash's leftover. A process that cannot get the exclusive lock right away skips that
// deletion (the next process to open the store alone does it). Locks die with their process,
// so a crash never leaves the store locked.
//
// flock locks belong to an open file description: two StoreLocks in one process exclude each
// other like two processes do. Converting between shared and exclusive is not atomic (the
// kernel drops the old lock first); callers that must not be without a lock for a moment
// pause their own writes around TryExclusive (ChunkStore does).
//
// Thread-compatible.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace reprise::store {

inline constexpr std::string_view kLockFileName = "lock";

class StoreLock {
 public:
  // Opens `dir`/lock, creating it (mode 0600) when missing; never follows a symlink. Holds no
  // lock yet. Errors: Unavailable (read-only folder), IoError.
  static Result<StoreLock> Open(const std::string& dir);

  StoreLock() = default;
  StoreLock(StoreLock&&) noexcept = default;
  StoreLock& operator=(StoreLock&&) noexcept = default;

  bool is_open() const { return fd_.is_valid(); }

  // Takes the lock shared, waiting up to `timeout_ms` for an exclusive holder to finish.
  // Errors: Unavailable (still held exclusively at the deadline), IoError.
  Status LockShared(int timeout_ms);

  // Takes the lock exclusive without waiting. Returns false when another holder exists;
  // then this object holds NO lock (call LockShared again).
  Result<bool> TryLockExclusive();

  // Releases whatever this object holds.
  void Unlock();

 private:
  explicit StoreLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace reprise::store
