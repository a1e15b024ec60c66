// FileSystem: the file operations the store needs, behind an interface so that tests can
// inject crashes, torn writes, a full disk or a read-only folder (docs/style.md §8).
//
// Paths are plain strings. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace reprise::store {

// A file open for sequential reading. Confined to one thread.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;

  // The file's size when it was opened.
  virtual uint64_t size() const = 0;

  // Reads up to out.size() bytes at the current position and advances it; returns how many
  // were read, 0 at the end of the file. Errors: IoError.
  virtual Result<size_t> Read(std::span<uint8_t> out) = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates `path` (mode 0700) and missing parents. Ok if it exists.
  virtual Status CreateDir(const std::string& path) = 0;

  // Writes `data` to a new file `path` (mode 0600), replacing any, and fsyncs it when `sync`.
  // Not atomic by itself: the store writes a temporary name and then calls Rename.
  // Errors: IoError, ResourceExhausted (disk full), Unavailable (read-only).
  virtual Status WriteFile(const std::string& path, std::span<const uint8_t> data, bool sync) = 0;

  // Renames atomically, replacing `to`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;

  // fsyncs a folder (makes renames and removals in it durable).
  virtual Status SyncDir(const std::string& path) = 0;

  // Removes a file, or an empty folder (one that stands where a file should be).
  virtual Status Remove(const std::string& path) = 0;

  // The whole file. Errors: NotFound, IoError.
  virtual Result<std::vector<uint8_t>> ReadFile(const std::string& path) = 0;

  // Opens `path` for reading in pieces (large KV files are read straight into their final
  // buffers). Errors: NotFound, IoError. The default reads the whole file with ReadFile.
  virtual Result<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path);

  // Names (not paths) of the regular files in a folder.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;

  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
};

// The real file system (POSIX calls).
std::unique_ptr<FileSystem> NewPosixFileSystem();

}  // namespace reprise::store
