// GgufFile: a parsed, validated, read-only view of a GGUF model file.
//
// Open() memory-maps the file; Parse() reads a buffer the caller keeps alive. Parsing
// validates everything before anything is used: every count, string length, offset and size
// is checked against the file size with overflow-safe arithmetic, no two tensors' data may
// overlap, and a malformed file gets a Corrupt (or Unimplemented, for well-formed features we
// do not read) error that names the field and its file offset. Tensor data is not copied.
//
// Thread-compatible; const methods may be called from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "gguf/gguf_types.h"

namespace reprise::gguf {

class GgufFile {
 public:
  // Maps and parses the file at `path`. Errors: NotFound, IoError, Corrupt, Unimplemented.
  static Result<GgufFile> Open(const std::string& path);

  // Parses `bytes`, which must outlive the returned GgufFile and every view taken from it.
  static Result<GgufFile> Parse(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size_bytes() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // The path given to Open(), or "" for Parse().
  const std::string& path() const { return path_; }
  // The mapping behind Open(), or nullptr for Parse().
  const MappedFile* mapped_file() const { return mapped_.get(); }

  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // nullptr when absent.
  const Value* FindValue(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;
  bool HasKey(std::string_view key) const { return FindValue(key) != nullptr; }

  // Typed accessors. Errors: NotFound when the key is absent; InvalidArgument when the
  // value has another type or does not fit (e.g. a negative count). Integers of any width
  // are accepted where they fit; floats accept float32 and float64.
  Result<std::string_view> GetString(std::string_view key) const;
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<uint64_t> GetU64(std::string_view key) const;
  Result<int64_t> GetI64(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::vector<std::string_view>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetF32Array(std::string_view key) const;
  Result<std::vector<int32_t>> GetI32Array(std::string_view key) const;

  // As above, but an absent key yields `fallback` (a present key of the wrong type is still
  // an error).
  Result<uint32_t> GetU32Or(std::string_view key, uint32_t fallback) const;
  Result<float> GetF32Or(std::string_view key, float fallback) const;
  Result<bool> GetBoolOr(std::string_view key, bool fallback) const;
  Result<std::string_view> GetStringOr(std::string_view key, std::string_view fallback) const;

 private:
  GgufFile() = default;
  Status ParseAll();

  std::string path_;
  std::unique_ptr<MappedFile> mapped_;  // keeps the bytes alive for Open()
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> metadata_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace reprise::gguf
