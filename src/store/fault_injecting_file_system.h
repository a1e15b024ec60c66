// FaultInjectingFileSystem: a FileSystem test double that wraps a real one and injects the
// failures the store must survive (docs/style.md §8): a full disk, a read-only folder, a torn write
// and a crash. It is compiled into reprise_store so that every test binary above the store
// can use it.
//
// All faults are deterministic: they are triggered by counting calls, never by time or
// chance. "Mutating" calls are CreateDir, WriteFile, Rename, SyncDir and Remove; each one
// that reaches the check counts as one operation, whether it then fails or not.
//
// After a crash every call fails (IoError "crashed") and nothing reaches the wrapped file
// system, as if the process had died at that point; a test then opens the same folder with a
// fresh file system, as a restarted process would.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include "base/thread_annotations.h"
#include "store/file_system.h"

namespace reprise::store {

class FaultInjectingFileSystem final : public FileSystem {
 public:
  // `base` is borrowed and must outlive this object.
  explicit FaultInjectingFileSystem(FileSystem* base);

  // Disk full: the `n`-th WriteFile from now (1 = the next one) fails with ResourceExhausted
  // and writes nothing. Later writes succeed. n <= 0 cancels.
  void FailNthWrite(int n);

  // Disk full: while set, every WriteFile fails with ResourceExhausted and writes nothing.
  void FailAllWrites(bool fail);

  // A read-only folder: while set, every mutating call on a path equal to `dir` or inside it
  // fails with Unavailable and changes nothing. Reads still work. An empty `dir` clears it.
  void SetReadOnlyDir(std::string dir);

  // A torn write: the `n`-th WriteFile from now writes only the first `keep_bytes` bytes
  // (unsynced, but they land), returns IoError and then crashes the file system.
  void TearNthWrite(int n, size_t keep_bytes);

  // Crashes just before the mutating operation number `num_ops` + 1 from now: the first
  // `num_ops` mutating calls run, and that one and everything after fail. 0 crashes at the
  // next mutating call.
  void CrashAfterOps(int64_t num_ops);

  // Crashes now.
  void Crash();

  bool crashed() const;
  // Mutating operations performed or attempted so far (crashed calls excluded).
  int64_t num_mutating_ops() const;
  int64_t num_writes() const;

  Status CreateDir(const std::string& path) override;
  Status WriteFile(const std::string& path, std::span<const uint8_t> data, bool sync) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  Status Remove(const std::string& path) override;
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override;
  Result<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Counts one mutating operation on `path` (and `other_path`, for renames) and returns the
  // fault it meets, if any.
  Status BeginMutation(const std::string& path, const std::string& other_path)
      REPRISE_REQUIRES(mutex_);
  bool IsReadOnly(const std::string& path) const REPRISE_REQUIRES(mutex_);
  Status CrashedError() const;

  FileSystem* const base_;
  mutable std::mutex mutex_;
  bool crashed_ REPRISE_GUARDED_BY(mutex_) = false;
  bool fail_all_writes_ REPRISE_GUARDED_BY(mutex_) = false;
  std::string read_only_dir_ REPRISE_GUARDED_BY(mutex_);
  int64_t num_ops_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t num_writes_ REPRISE_GUARDED_BY(mutex_) = 0;
  int64_t crash_at_op_ REPRISE_GUARDED_BY(mutex_) = kNever;    // op index that crashes
  int64_t fail_write_at_ REPRISE_GUARDED_BY(mutex_) = kNever;  // write index that fails
  int64_t tear_write_at_ REPRISE_GUARDED_BY(mutex_) = kNever;  // write index that tears
  size_t tear_keep_bytes_ REPRISE_GUARDED_BY(mutex_) = 0;
};

}  // namespace reprise::store
