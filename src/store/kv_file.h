// KV files: one file per chunk in the flash tier, holding its tokens, text and encoded K/V
// (docs/design.md §6). SQLite holds only metadata; the tensors live here.
//
// Layout: a fixed 80-byte little-endian header, then the payload.
//
//   offset size field
//   0      4    magic "RPKV"
//   4      2    format version (kKvFileVersion; version 1 files are still read)
//   6      1    codec (KvCodec)
//   7      1    flags: bit 0 = computed exactly (exact KV only in a lossless codec); other bits 0
//   8      8    model fingerprint
//   16     8    chunk id (prefix-tree node)
//   24     8    parent chunk id
//   32     8    content hash
//   40     4    num_layers
//   44     4    num_kv_heads
//   48     4    head_dim
//   52     4    num_tokens
//   56     8    payload bytes (= file size - 80)
//   64     8    XXH3-64 of the payload
//   72     8    XXH3-64 of header bytes [0, 72)
//
// Payload: i32 token ids [num_tokens]; i32 positions [num_tokens]; u32 text bytes, then the
// text (UTF-8, no terminator); since version 2: u32 namespace bytes, then the namespace name;
// since version 3: the provenance (12 bytes: u8 origin (kv::KvOrigin), 3 bytes 0, f32
// recompute ratio, i32 check layer); K encoded, then V encoded (kv_codec.h layouts). Files of
// versions 1 and 2 read with an unknown provenance.
//
// With the namespace (version 2) a file carries everything its catalog row holds except the
// access statistics and the pin, so a lost catalog can be rebuilt from the files
// (catalog_rebuild.h). Version 1 files are read as before but cannot be attributed to a
// namespace; a rebuild drops them.
//
// A file is written under a temporary name unique to the writing process and call
// (`<stem>.<pid>-<n>.rpkv.tmp`), fsynced, renamed to `name`, and the folder fsynced, so a
// crash leaves the old file, the new one or a stray temporary (which recovery removes) —
// never a torn `name` — and two processes writing the same chunk never share a temporary.
// Reading checks everything before trusting anything: any defect is Corrupt, which callers
// treat as a cache miss.
//
// Functions are thread-safe (they touch only their arguments and the FileSystem).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/chunk.h"
#include "store/file_system.h"
#include "store/kv_codec.h"

namespace reprise::store {

inline constexpr uint16_t kKvFileVersion = 3;
// The oldest version readers accept.
inline constexpr uint16_t kKvFileMinVersion = 1;
inline constexpr size_t kKvFileHeaderBytes = 80;
// KV files end with this suffix and their temporaries with kKvFileSuffix + kTempFileSuffix;
// recovery only touches such names.
inline constexpr std::string_view kKvFileSuffix = ".rpkv";
inline constexpr std::string_view kTempFileSuffix = ".tmp";

// Limits a reader accepts, so that a damaged header cannot ask for absurd allocations.
inline constexpr uint32_t kMaxKvFileLayers = 1024;
inline constexpr uint32_t kMaxKvFileKvHeads = 1024;
inline constexpr uint32_t kMaxKvFileHeadDim = 4096;
inline constexpr uint32_t kMaxKvFileTokens = 1 << 20;
inline constexpr uint32_t kMaxKvFileNamespaceBytes = 4096;

// The decoded header.
struct KvFileHeader {
  uint16_t version = kKvFileVersion;
  KvCodec codec = KvCodec::kF16;
  bool exact = false;
  uint64_t model_fingerprint = 0;
  kv::ChunkId chunk_id = 0;
  kv::ChunkId parent_id = 0;
  kv::ContentHash content_hash = 0;
  uint32_t num_layers = 0;
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t num_tokens = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// Everything of a file but its KV: what a catalog row needs (ReadKvFileMetadata).
struct KvFileMetadata {
  KvFileHeader header;
  bool has_namespace = false;  // version >= 2
  std::string name_space;
  kv::KvProvenance provenance;  // unknown before version 3
  std::vector<int32_t> tokens;
  std::string text;
  uint64_t file_bytes = 0;
};

// What a write produced, for the catalog row.
struct KvFileInfo {
  KvCodec codec = KvCodec::kF16;  // the codec actually used (EffectiveKvCodec)
  uint64_t file_bytes = 0;
  uint64_t payload_checksum = 0;
};

// The file name for chunk `chunk_id` of namespace `name_space`: 16 hex digits of a hash of
// the namespace, '-', 16 hex digits of the id, "-i" unless the file holds exact KV (computed
// exactly and kept in a lossless codec: HoldsExactKv), kKvFileSuffix. Deterministic, so that
// writing the same chunk again replaces its file; and exact KV never shares a name with any
// other, so that writing inexact KV cannot overwrite the exact file the catalog keeps.
std::string KvFileName(std::string_view name_space, kv::ChunkId chunk_id,
                       bool holds_exact_kv = true);

// The whole file in memory (version kKvFileVersion, recording `name_space`). Errors:
// InvalidArgument when the entry has no KV or its sizes do not match its shape (tokens,
// positions, k, v) or exceed the reader's limits. The codec used is
// EffectiveKvCodec(codec, head_dim); ParseKvFileHeader tells it back.
Result<std::vector<uint8_t>> SerializeKvFile(const kv::ChunkEntry& entry, KvCodec codec,
                                             uint64_t model_fingerprint,
                                             std::string_view name_space = {});

// Writes `dir/name` durably: a temporary (KvTempFileName), fsync, rename, fsync of `dir`. The
// temporary is removed when a step fails. Concurrent writes of the same `name` are safe (the
// last rename wins; each is a complete file). Errors: those of SerializeKvFile and of the
// FileSystem (ResourceExhausted for a full disk, Unavailable for a read-only folder, IoError).
Result<KvFileInfo> WriteKvFile(FileSystem& fs, const std::string& dir, const std::string& name,
                               const kv::ChunkEntry& entry, KvCodec codec,
                               uint64_t model_fingerprint, std::string_view name_space = {});

// A fresh temporary name for writing `name`: unique to this process and call, ending in
// kKvFileSuffix + kTempFileSuffix.
std::string KvTempFileName(std::string_view name);

// Checks and decodes the header alone (the first kKvFileHeaderBytes of `bytes`).
// Errors: Corrupt (short, magic, version, header checksum, flags, codec, limits).
Result<KvFileHeader> ParseKvFileHeader(std::span<const uint8_t> bytes);

// Checks and decodes a whole file. Errors: Corrupt for any defect — a short or long file,
// wrong magic or version, a header or payload checksum mismatch, sizes that do not add up, an
// unknown codec, a fingerprint other than `expected_fingerprint`, an id other than
// `expected_id` (when given).
Result<kv::ChunkEntry> ParseKvFile(std::span<const uint8_t> bytes, uint64_t expected_fingerprint,
                                   std::optional<kv::ChunkId> expected_id);

// Reads the header, tokens, text and namespace of `path`, not its KV; the payload checksum is
// NOT verified (the KV is, when it is read). Errors: NotFound, IoError, Corrupt (a bad header,
// sizes that do not add up).
Result<KvFileMetadata> ReadKvFileMetadata(FileSystem& fs, const std::string& path);

// ReadKvFileMetadata of a file held in memory (a remote tier's value). Errors: Corrupt.
Result<KvFileMetadata> ParseKvFileMetadata(std::span<const uint8_t> bytes);

// Reads and parses `path`. Errors: NotFound (no file), IoError, and those of ParseKvFile.
Result<kv::ChunkEntry> ReadKvFile(FileSystem& fs, const std::string& path,
                                  uint64_t expected_fingerprint,
                                  std::optional<kv::ChunkId> expected_id);

}  // namespace reprise::store
