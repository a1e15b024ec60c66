#include "store/fault_injecting_file_system.h"

#include <algorithm>
#include <utility>

namespace reprise::store {

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem* base) : base_(base) {}

void FaultInjectingFileSystem::FailNthWrite(int n) {
  MutexLock lock(mutex_);
  fail_write_at_ = n <= 0 ? kNever : num_writes_ + n;
}

void FaultInjectingFileSystem::FailAllWrites(bool fail) {
  MutexLock lock(mutex_);
  fail_all_writes_ = fail;
}

void FaultInjectingFileSystem::SetReadOnlyDir(std::string dir) {
  MutexLock lock(mutex_);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  read_only_dir_ = std::move(dir);
}

void FaultInjectingFileSystem::TearNthWrite(int n, size_t keep_bytes) {
  MutexLock lock(mutex_);
  tear_write_at_ = n <= 0 ? kNever : num_writes_ + n;
  tear_keep_bytes_ = keep_bytes;
}

void FaultInjectingFileSystem::CrashAfterOps(int64_t num_ops) {
  MutexLock lock(mutex_);
  crash_at_op_ = num_ops_ + std::max<int64_t>(num_ops, 0) + 1;
}

void FaultInjectingFileSystem::Crash() {
  MutexLock lock(mutex_);
  crashed_ = true;
}

bool FaultInjectingFileSystem::crashed() const {
  MutexLock lock(mutex_);
  return crashed_;
}

int64_t FaultInjectingFileSystem::num_mutating_ops() const {
  MutexLock lock(mutex_);
  return num_ops_;
}

int64_t FaultInjectingFileSystem::num_writes() const {
  MutexLock lock(mutex_);
  return num_writes_;
}

Status FaultInjectingFileSystem::CrashedError() const {
  return IoError("file system crashed (injected)");
}

bool FaultInjectingFileSystem::IsReadOnly(const std::string& path) const {
  if (read_only_dir_.empty() || path.empty()) return false;
  if (path.compare(0, read_only_dir_.size(), read_only_dir_) != 0) return false;
  return path.size() == read_only_dir_.size() || path[read_only_dir_.size()] == '/' ||
         read_only_dir_ == "/";
}

Status FaultInjectingFileSystem::BeginMutation(const std::string& path,
                                               const std::string& other_path) {
  if (crashed_) return CrashedError();
  ++num_ops_;
  if (num_ops_ >= crash_at_op_) {
    crashed_ = true;
    return CrashedError();
  }
  if (IsReadOnly(path) || IsReadOnly(other_path)) {
    return UnavailableError(path + ": read-only file system (injected)");
  }
  return Status::Ok();
}

Status FaultInjectingFileSystem::CreateDir(const std::string& path) {
  {
    MutexLock lock(mutex_);
    REPRISE_RETURN_IF_ERROR(BeginMutation(path, ""));
  }
  return base_->CreateDir(path);
}

Status FaultInjectingFileSystem::WriteFile(const std::string& path, std::span<const uint8_t> data,
                                           bool sync) {
  size_t keep_bytes = data.size();
  bool tear = false;
  {
    MutexLock lock(mutex_);
    REPRISE_RETURN_IF_ERROR(BeginMutation(path, ""));
    const int64_t index = ++num_writes_;
    if (fail_all_writes_ || index == fail_write_at_) {
      return ResourceExhaustedError("write " + path + ": no space left on device (injected)");
    }
    if (index == tear_write_at_) {
      tear = true;
      keep_bytes = std::min(tear_keep_bytes_, data.size());
      // The crash happens while the bytes are in flight: nothing after this call runs.
      crashed_ = true;
    }
  }
  if (!tear) return base_->WriteFile(path, data, sync);
  Status partial = base_->WriteFile(path, data.first(keep_bytes), /*sync=*/false);
  if (!partial.ok()) return partial;
  return IoError("write " + path + ": torn after " + std::to_string(keep_bytes) +
                 " bytes (injected crash)");
}

Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  {
    MutexLock lock(mutex_);
    REPRISE_RETURN_IF_ERROR(BeginMutation(from, to));
  }
  return base_->Rename(from, to);
}

Status FaultInjectingFileSystem::SyncDir(const std::string& path) {
  {
    MutexLock lock(mutex_);
    REPRISE_RETURN_IF_ERROR(BeginMutation(path, ""));
  }
  return base_->SyncDir(path);
}

Status FaultInjectingFileSystem::Remove(const std::string& path) {
  {
    MutexLock lock(mutex_);
    REPRISE_RETURN_IF_ERROR(BeginMutation(path, ""));
  }
  return base_->Remove(path);
}

Result<std::vector<uint8_t>> FaultInjectingFileSystem::ReadFile(const std::string& path) {
  {
    MutexLock lock(mutex_);
    if (crashed_) return CrashedError();
  }
  return base_->ReadFile(path);
}

Result<std::unique_ptr<ReadableFile>> FaultInjectingFileSystem::OpenForRead(
    const std::string& path) {
  {
    MutexLock lock(mutex_);
    if (crashed_) return CrashedError();
  }
  return base_->OpenForRead(path);
}

Result<std::vector<std::string>> FaultInjectingFileSystem::ListDir(const std::string& path) {
  {
    MutexLock lock(mutex_);
    if (crashed_) return CrashedError();
  }
  return base_->ListDir(path);
}

Result<uint64_t> FaultInjectingFileSystem::FileSize(const std::string& path) {
  {
    MutexLock lock(mutex_);
    if (crashed_) return CrashedError();
  }
  return base_->FileSize(path);
}

}  // namespace reprise::store
