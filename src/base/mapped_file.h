// MappedFile: a read-only memory mapping of a whole file (how model files are read).
//
// The mapping lives as long as the MappedFile; spans from data() must not outlive it.
// Thread-compatible; the mapped bytes may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace reprise {

class MappedFile {
 public:
  // Maps `path` read-only. Errors: NotFound, IoError; InvalidArgument when `path` is not a
  // regular file (a FIFO, device, socket or directory: refused at once, never waited on).
  // An empty file maps to an empty span.
  static Result<MappedFile> Open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> data() const { return {data_, size_bytes_}; }
  size_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }

  // Asks the kernel to drop the pages of [offset, offset + length) from this process's
  // resident set (used after weights are repacked into other buffers). Best effort.
  void AdviseDontNeed(size_t offset, size_t length) const;

  // Tells the kernel that [offset, offset + length) is read at random: no read-ahead or
  // fault-around, so each access maps only its own page. Best effort.
  void AdviseRandom(size_t offset, size_t length) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size_bytes)
      : path_(std::move(path)), data_(data), size_bytes_(size_bytes) {}
  void Unmap();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace reprise
