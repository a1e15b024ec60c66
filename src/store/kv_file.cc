#include "store/kv_file.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/check.h"
#include "base/checked_math.h"

namespace reprise::store {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'P', 'K', 'V'};
constexpr size_t kHeaderChecksumAt = 72;
constexpr uint8_t kExactFlag = 1;

void PutU16(uint8_t* at, uint16_t value) {
  for (int i = 0; i < 2; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}
void PutU32(uint8_t* at, uint32_t value) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}
void PutU64(uint8_t* at, uint64_t value) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}
uint16_t GetU16(const uint8_t* at) { return static_cast<uint16_t>(at[0] | (at[1] << 8)); }
uint32_t GetU32(const uint8_t* at) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | at[i];
  return value;
}
uint64_t GetU64(const uint8_t* at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | at[i];
  return value;
}

void AppendI32s(std::span<const int32_t> values, std::vector<uint8_t>* out) {
  const size_t at = out->size();
  out->resize(at + values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    PutU32(out->data() + at + 4 * i, static_cast<uint32_t>(values[i]));
  }
}

void ReadI32s(const uint8_t* at, std::span<int32_t> values) {
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(GetU32(at + 4 * i));
}

Status Corrupt(const std::string& what) { return CorruptError("KV file: " + what); }

constexpr uint64_t kProvenanceBytes = 12;

// Payload bytes for a header's shape, or nullopt on overflow: tokens and positions, the text
// length, `text_bytes` of text, (version >= 2) the namespace length and `namespace_bytes` of
// it, (version >= 3) the provenance, then K and V.
std::optional<uint64_t> PayloadBytes(const KvFileHeader& header, uint64_t text_bytes,
                                     uint64_t namespace_bytes) {
  const auto rows =
      CheckedMul(uint64_t{header.num_layers} * header.num_kv_heads, header.num_tokens);
  if (!rows) return std::nullopt;
  const auto tensor = EncodedTensorBytes(header.codec, *rows, header.head_dim);
  if (!tensor) return std::nullopt;
  const auto tensors = CheckedMul(*tensor, 2);
  if (!tensors) return std::nullopt;
  auto fixed = CheckedAdd(uint64_t{header.num_tokens} * 8 + 4, text_bytes);
  if (!fixed) return std::nullopt;
  if (header.version >= 2) {
    fixed = CheckedAdd(*fixed, namespace_bytes + 4);
    if (!fixed) return std::nullopt;
  }
  if (header.version >= 3) {
    fixed = CheckedAdd(*fixed, kProvenanceBytes);
    if (!fixed) return std::nullopt;
  }
  return CheckedAdd(*fixed, *tensors);
}

}  // namespace

std::string KvFileName(std::string_view name_space, kv::ChunkId chunk_id, bool holds_exact_kv) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%016llx-%016llx%s",
                static_cast<unsigned long long>(XXH3_64bits(name_space.data(), name_space.size())),
                static_cast<unsigned long long>(chunk_id), holds_exact_kv ? "" : "-i");
  return std::string(buffer) + std::string(kKvFileSuffix);
}

Result<std::vector<uint8_t>> SerializeKvFile(const kv::ChunkEntry& entry, KvCodec codec,
                                             uint64_t model_fingerprint,
                                             std::string_view name_space) {
  if (entry.kv == nullptr) return InvalidArgumentError("KV file: entry has no KV");
  const kv::ChunkKv& kv = *entry.kv;
  if (kv.num_layers <= 0 || static_cast<uint32_t>(kv.num_layers) > kMaxKvFileLayers ||
      kv.num_kv_heads <= 0 || static_cast<uint32_t>(kv.num_kv_heads) > kMaxKvFileKvHeads ||
      kv.head_dim <= 0 || static_cast<uint32_t>(kv.head_dim) > kMaxKvFileHeadDim ||
      kv.num_tokens < 0 || static_cast<uint32_t>(kv.num_tokens) > kMaxKvFileTokens) {
    return InvalidArgumentError("KV file: KV shape out of range");
  }
  const size_t num_tokens = static_cast<size_t>(kv.num_tokens);
  const size_t values =
      static_cast<size_t>(kv.num_layers) * kv.num_kv_heads * num_tokens * kv.head_dim;
  if (entry.tokens.size() != num_tokens || kv.positions.size() != num_tokens ||
      kv.k.size() != values || kv.v.size() != values) {
    return InvalidArgumentError(
        "KV file: sizes of tokens, positions, K or V do not match the "
        "KV shape");
  }
  if (entry.text.size() > UINT32_MAX) return InvalidArgumentError("KV file: text too long");
  if (name_space.size() > kMaxKvFileNamespaceBytes) {
    return InvalidArgumentError("KV file: namespace name too long");
  }

  KvFileHeader header;
  header.codec = EffectiveKvCodec(codec, kv.head_dim);
  header.num_layers = static_cast<uint32_t>(kv.num_layers);
  header.num_kv_heads = static_cast<uint32_t>(kv.num_kv_heads);
  header.head_dim = static_cast<uint32_t>(kv.head_dim);
  header.num_tokens = static_cast<uint32_t>(kv.num_tokens);
  const auto payload_bytes = PayloadBytes(header, entry.text.size(), name_space.size());
  if (!payload_bytes || *payload_bytes > SIZE_MAX - kKvFileHeaderBytes) {
    return InvalidArgumentError("KV file: too large");
  }

  std::vector<uint8_t> out(kKvFileHeaderBytes);
  out.reserve(kKvFileHeaderBytes + *payload_bytes);
  AppendI32s(entry.tokens, &out);
  AppendI32s(kv.positions, &out);
  const size_t text_at = out.size();
  out.resize(text_at + 4 + entry.text.size());
  PutU32(out.data() + text_at, static_cast<uint32_t>(entry.text.size()));
  if (!entry.text.empty())
    std::memcpy(out.data() + text_at + 4, entry.text.data(), entry.text.size());
  const size_t namespace_at = out.size();
  out.resize(namespace_at + 4 + name_space.size());
  PutU32(out.data() + namespace_at, static_cast<uint32_t>(name_space.size()));
  if (!name_space.empty()) {
    std::memcpy(out.data() + namespace_at + 4, name_space.data(), name_space.size());
  }
  const size_t provenance_at = out.size();
  out.resize(provenance_at + kProvenanceBytes, 0);
  out[provenance_at] = static_cast<uint8_t>(entry.provenance.origin);
  uint32_t ratio_bits = 0;
  std::memcpy(&ratio_bits, &entry.provenance.recompute_ratio, 4);
  PutU32(out.data() + provenance_at + 4, ratio_bits);
  PutU32(out.data() + provenance_at + 8, static_cast<uint32_t>(entry.provenance.check_layer));
  AppendEncodedTensor(header.codec, kv.k, kv.head_dim, &out);
  AppendEncodedTensor(header.codec, kv.v, kv.head_dim, &out);
  const uint64_t payload_size = out.size() - kKvFileHeaderBytes;
  if (payload_size != *payload_bytes) {
    return InternalError("KV file: payload size " + std::to_string(payload_size) +
                         " differs from the planned " + std::to_string(*payload_bytes));
  }

  uint8_t* h = out.data();
  std::memcpy(h, kMagic, 4);
  PutU16(h + 4, kKvFileVersion);
  h[6] = static_cast<uint8_t>(header.codec);
  h[7] = entry.exact ? kExactFlag : 0;
  PutU64(h + 8, model_fingerprint);
  PutU64(h + 16, entry.id);
  PutU64(h + 24, entry.parent);
  PutU64(h + 32, entry.content);
  PutU32(h + 40, header.num_layers);
  PutU32(h + 44, header.num_kv_heads);
  PutU32(h + 48, header.head_dim);
  PutU32(h + 52, header.num_tokens);
  PutU64(h + 56, payload_size);
  PutU64(h + 64, XXH3_64bits(out.data() + kKvFileHeaderBytes, payload_size));
  PutU64(h + kHeaderChecksumAt, XXH3_64bits(h, kHeaderChecksumAt));
  return out;
}

std::string KvTempFileName(std::string_view name) {
  static std::atomic<uint64_t> next{0};
  std::string_view stem = name;
  if (stem.ends_with(kKvFileSuffix)) stem.remove_suffix(kKvFileSuffix.size());
  char tag[48];
  std::snprintf(tag, sizeof(tag), ".%lx-%llx", static_cast<unsigned long>(::getpid()),
                static_cast<unsigned long long>(next.fetch_add(1, std::memory_order_relaxed)));
  return std::string(stem) + tag + std::string(kKvFileSuffix) + std::string(kTempFileSuffix);
}

Result<KvFileInfo> WriteKvFile(FileSystem& fs, const std::string& dir, const std::string& name,
                               const kv::ChunkEntry& entry, KvCodec codec,
                               uint64_t model_fingerprint, std::string_view name_space) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                           SerializeKvFile(entry, codec, model_fingerprint, name_space));
  REPRISE_ASSIGN_OR_RETURN(KvFileHeader header, ParseKvFileHeader(bytes));
  const std::string path = dir + "/" + name;
  const std::string temp = dir + "/" + KvTempFileName(name);
  Status status = fs.WriteFile(temp, bytes, /*sync=*/true);
  if (status.ok()) status = fs.Rename(temp, path);
  if (!status.ok()) {
    // Best effort: a stray temporary is also removed by recovery.
    fs.Remove(temp).IgnoreError();
    return status;
  }
  // After the rename the file is complete under its name; only its durability is in question.
  REPRISE_RETURN_IF_ERROR(fs.SyncDir(dir));
  KvFileInfo info;
  info.codec = header.codec;
  info.file_bytes = bytes.size();
  info.payload_checksum = header.payload_checksum;
  return info;
}

Result<KvFileHeader> ParseKvFileHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kKvFileHeaderBytes) {
    return Corrupt("short file (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint8_t* h = bytes.data();
  if (std::memcmp(h, kMagic, 4) != 0) return Corrupt("bad magic");
  if (XXH3_64bits(h, kHeaderChecksumAt) != GetU64(h + kHeaderChecksumAt)) {
    return Corrupt("header checksum mismatch");
  }
  KvFileHeader header;
  header.version = GetU16(h + 4);
  if (header.version < kKvFileMinVersion || header.version > kKvFileVersion) {
    return Corrupt("unsupported format version " + std::to_string(header.version));
  }
  if (!IsKnownKvCodec(h[6])) return Corrupt("unknown codec " + std::to_string(h[6]));
  header.codec = static_cast<KvCodec>(h[6]);
  if ((h[7] & ~kExactFlag) != 0) return Corrupt("unknown flags");
  header.exact = (h[7] & kExactFlag) != 0;
  header.model_fingerprint = GetU64(h + 8);
  header.chunk_id = GetU64(h + 16);
  header.parent_id = GetU64(h + 24);
  header.content_hash = GetU64(h + 32);
  header.num_layers = GetU32(h + 40);
  header.num_kv_heads = GetU32(h + 44);
  header.head_dim = GetU32(h + 48);
  header.num_tokens = GetU32(h + 52);
  header.payload_bytes = GetU64(h + 56);
  header.payload_checksum = GetU64(h + 64);
  if (header.num_layers == 0 || header.num_layers > kMaxKvFileLayers || header.num_kv_heads == 0 ||
      header.num_kv_heads > kMaxKvFileKvHeads || header.head_dim == 0 ||
      header.head_dim > kMaxKvFileHeadDim || header.num_tokens > kMaxKvFileTokens) {
    return Corrupt("shape out of range");
  }
  if (EffectiveKvCodec(header.codec, static_cast<int>(header.head_dim)) != header.codec) {
    return Corrupt("codec " + std::string(KvCodecName(header.codec)) + " with head_dim " +
                   std::to_string(header.head_dim));
  }
  return header;
}

namespace {

// Reads a KV file's payload in pieces, hashing what it reads, so that the hash is computed
// while the bytes are still in cache.
class PayloadReader {
 public:
  explicit PayloadReader(ReadableFile& file) : file_(file) {
    REPRISE_CHECK(state_ != nullptr) << "out of memory";
    XXH3_64bits_reset(state_.get());
  }

  // Reads exactly out.size() bytes. Errors: Corrupt when the file ends first, IoError.
  Status Read(std::span<uint8_t> out) {
    constexpr size_t kPieceBytes = size_t{4} << 20;
    while (!out.empty()) {
      REPRISE_ASSIGN_OR_RETURN(const size_t n,
                               file_.Read(out.first(std::min(out.size(), kPieceBytes))));
      if (n == 0) return Corrupt("short file");
      XXH3_64bits_update(state_.get(), out.data(), n);
      out = out.subspan(n);
    }
    return Status::Ok();
  }

  uint64_t digest() const { return XXH3_64bits_digest(state_.get()); }

 private:
  struct FreeState {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  ReadableFile& file_;
  // The library keeps the state's layout private; it allocates it (once per file read).
  std::unique_ptr<XXH3_state_t, FreeState> state_{XXH3_createState()};
};

// Reads the payload up to K: tokens, positions, text and (version >= 2) the namespace, into
// `meta` and `positions`; returns the payload offset of K. Checks that the sizes add up to
// `payload_bytes`.
Result<uint64_t> ReadPayloadPrefix(PayloadReader& reader, const KvFileHeader& header,
                                   uint64_t payload_bytes, KvFileMetadata* meta,
                                   std::vector<int32_t>* positions) {
  const size_t num_tokens = header.num_tokens;
  const uint64_t text_length_at = uint64_t{header.num_tokens} * 8;
  if (text_length_at + 4 > payload_bytes) return Corrupt("payload too short for its tokens");
  std::vector<uint8_t> token_part(static_cast<size_t>(text_length_at) + 4);
  REPRISE_RETURN_IF_ERROR(reader.Read(token_part));
  const uint32_t text_bytes = GetU32(token_part.data() + text_length_at);
  const uint64_t namespace_length_at = text_length_at + 4 + text_bytes;
  const bool has_namespace = header.version >= 2;
  if (namespace_length_at + (has_namespace ? 4 : 0) > payload_bytes) {
    return Corrupt("payload too short for its text");
  }
  meta->tokens.resize(num_tokens);
  ReadI32s(token_part.data(), meta->tokens);
  positions->resize(num_tokens);
  ReadI32s(token_part.data() + num_tokens * 4, *positions);
  meta->text.resize(text_bytes);
  REPRISE_RETURN_IF_ERROR(
      reader.Read(std::span(reinterpret_cast<uint8_t*>(meta->text.data()), meta->text.size())));
  uint32_t namespace_bytes = 0;
  meta->has_namespace = has_namespace;
  if (has_namespace) {
    uint8_t length[4];
    REPRISE_RETURN_IF_ERROR(reader.Read(length));
    namespace_bytes = GetU32(length);
    if (namespace_bytes > kMaxKvFileNamespaceBytes ||
        namespace_length_at + 4 + namespace_bytes > payload_bytes) {
      return Corrupt("namespace length out of range");
    }
    meta->name_space.resize(namespace_bytes);
    REPRISE_RETURN_IF_ERROR(reader.Read(
        std::span(reinterpret_cast<uint8_t*>(meta->name_space.data()), namespace_bytes)));
  }
  const auto expected_bytes = PayloadBytes(header, text_bytes, namespace_bytes);
  if (!expected_bytes || *expected_bytes != payload_bytes) {
    return Corrupt("payload size does not match the shape");
  }
  uint64_t k_at = namespace_length_at + (has_namespace ? 4 + uint64_t{namespace_bytes} : 0);
  meta->provenance = kv::KvProvenance{};
  if (header.version >= 3) {
    uint8_t p[kProvenanceBytes];
    REPRISE_RETURN_IF_ERROR(reader.Read(p));
    float ratio = 0.0f;
    const uint32_t ratio_bits = GetU32(p + 4);
    std::memcpy(&ratio, &ratio_bits, 4);
    const auto check_layer = static_cast<int32_t>(GetU32(p + 8));
    if (p[0] > kv::kMaxKvOrigin || p[1] != 0 || p[2] != 0 || p[3] != 0 ||
        !(ratio >= 0.0f && ratio <= 1.0f) || check_layer < -1 ||
        check_layer >= static_cast<int32_t>(header.num_layers)) {
      return Corrupt("bad provenance");
    }
    meta->provenance = kv::KvProvenance{static_cast<kv::KvOrigin>(p[0]), ratio, check_layer};
    k_at += kProvenanceBytes;
  }
  return k_at;
}

// Reads the header of an open file and checks it against the file's size.
Result<KvFileHeader> ReadHeader(ReadableFile& file) {
  uint8_t head[kKvFileHeaderBytes];
  size_t got = 0;
  while (got < sizeof(head)) {
    REPRISE_ASSIGN_OR_RETURN(const size_t n, file.Read(std::span(head).subspan(got)));
    if (n == 0) break;
    got += n;
  }
  if (got < sizeof(head)) return Corrupt("short file (" + std::to_string(got) + " bytes)");
  REPRISE_ASSIGN_OR_RETURN(const KvFileHeader header, ParseKvFileHeader(head));
  if (header.payload_bytes != file.size() - kKvFileHeaderBytes) {
    return Corrupt("payload of " + std::to_string(file.size() - kKvFileHeaderBytes) +
                   " bytes, header says " + std::to_string(header.payload_bytes));
  }
  return header;
}

Result<kv::ChunkEntry> ReadOpenKvFile(ReadableFile& file, uint64_t expected_fingerprint,
                                      std::optional<kv::ChunkId> expected_id) {
  REPRISE_ASSIGN_OR_RETURN(const KvFileHeader header, ReadHeader(file));
  if (header.model_fingerprint != expected_fingerprint) return Corrupt("other model fingerprint");
  if (expected_id && header.chunk_id != *expected_id) return Corrupt("other chunk id");
  const uint64_t payload_bytes = header.payload_bytes;
  PayloadReader reader(file);
  KvFileMetadata meta;
  meta.header = header;
  std::vector<int32_t> positions;
  REPRISE_ASSIGN_OR_RETURN(const uint64_t k_at,
                           ReadPayloadPrefix(reader, header, payload_bytes, &meta, &positions));
  const size_t num_tokens = header.num_tokens;

  kv::ChunkEntry entry;
  entry.id = header.chunk_id;
  entry.parent = header.parent_id;
  entry.content = header.content_hash;
  entry.exact = HoldsExactKv(header.exact, header.codec);  // lossy KV is never exact
  entry.provenance = meta.provenance;
  entry.tokens = std::move(meta.tokens);
  entry.text = std::move(meta.text);
  auto kv = std::make_shared<kv::ChunkKv>();
  kv->num_layers = static_cast<int>(header.num_layers);
  kv->num_kv_heads = static_cast<int>(header.num_kv_heads);
  kv->head_dim = static_cast<int>(header.head_dim);
  kv->num_tokens = static_cast<int>(header.num_tokens);
  kv->positions = std::move(positions);
  const size_t tensor_bytes = static_cast<size_t>((payload_bytes - k_at) / 2);
  const size_t num_values =
      static_cast<size_t>(header.num_layers) * header.num_kv_heads * num_tokens * header.head_dim;
  kv->k.resize(num_values);  // left uninitialised: filled below, or the entry is dropped
  kv->v.resize(num_values);
  if (header.codec == KvCodec::kF16) {
    // The payload holds the f16 values as the buffers do (little-endian): read them in place.
    static_assert(std::endian::native == std::endian::little);
    if (tensor_bytes != num_values * sizeof(uint16_t)) return Corrupt("f16 tensor size");
    REPRISE_RETURN_IF_ERROR(
        reader.Read(std::span(reinterpret_cast<uint8_t*>(kv->k.data()), tensor_bytes)));
    REPRISE_RETURN_IF_ERROR(
        reader.Read(std::span(reinterpret_cast<uint8_t*>(kv->v.data()), tensor_bytes)));
    if (reader.digest() != header.payload_checksum) return Corrupt("payload checksum mismatch");
  } else {
    // Each tensor: all its scales, then its int8 rows, decoded piece by piece as they arrive
    // (the kernel reads ahead meanwhile). The entry is returned only once the checksum of
    // everything read matches.
    const size_t d = static_cast<size_t>(kv->head_dim);
    const size_t num_rows = num_values / d;
    const size_t rows_per_piece = std::max<size_t>(1, (size_t{1} << 20) / d);
    std::vector<float> scales(num_rows);
    std::vector<int8_t> piece(std::min(num_rows, rows_per_piece) * d);
    for (kv::KvBuffer* values : {&kv->k, &kv->v}) {
      REPRISE_RETURN_IF_ERROR(reader.Read(
          std::span(reinterpret_cast<uint8_t*>(scales.data()), num_rows * sizeof(float))));
      for (size_t row = 0; row < num_rows; row += rows_per_piece) {
        const size_t rows = std::min(rows_per_piece, num_rows - row);
        const std::span<int8_t> quants(piece.data(), rows * d);
        REPRISE_RETURN_IF_ERROR(
            reader.Read(std::span(reinterpret_cast<uint8_t*>(quants.data()), quants.size())));
        REPRISE_RETURN_IF_ERROR(
            DecodeInt8HadamardRows(std::span(scales).subspan(row, rows), quants, kv->head_dim,
                                   std::span(values->data() + row * d, rows * d)));
      }
    }
    if (reader.digest() != header.payload_checksum) return Corrupt("payload checksum mismatch");
  }
  entry.kv = std::move(kv);
  return entry;
}

// A file held in memory, for ParseKvFile.
class SpanReadableFile final : public ReadableFile {
 public:
  explicit SpanReadableFile(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<size_t> Read(std::span<uint8_t> out) override {
    const size_t n = std::min(out.size(), bytes_.size() - at_);
    if (n > 0) std::memcpy(out.data(), bytes_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace

Result<kv::ChunkEntry> ParseKvFile(std::span<const uint8_t> bytes, uint64_t expected_fingerprint,
                                   std::optional<kv::ChunkId> expected_id) {
  SpanReadableFile file(bytes);
  return ReadOpenKvFile(file, expected_fingerprint, expected_id);
}

namespace {

Result<KvFileMetadata> ReadOpenKvFileMetadata(ReadableFile& file) {
  REPRISE_ASSIGN_OR_RETURN(const KvFileHeader header, ReadHeader(file));
  PayloadReader reader(file);
  KvFileMetadata meta;
  meta.header = header;
  meta.file_bytes = file.size();
  std::vector<int32_t> positions;
  REPRISE_RETURN_IF_ERROR(
      ReadPayloadPrefix(reader, header, header.payload_bytes, &meta, &positions));
  return meta;
}

}  // namespace

Result<KvFileMetadata> ReadKvFileMetadata(FileSystem& fs, const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, fs.OpenForRead(path));
  Result<KvFileMetadata> meta = ReadOpenKvFileMetadata(*file);
  if (!meta.ok()) return meta.status().WithContext(path);
  return meta;
}

Result<KvFileMetadata> ParseKvFileMetadata(std::span<const uint8_t> bytes) {
  SpanReadableFile file(bytes);
  return ReadOpenKvFileMetadata(file);
}

Result<kv::ChunkEntry> ReadKvFile(FileSystem& fs, const std::string& path,
                                  uint64_t expected_fingerprint,
                                  std::optional<kv::ChunkId> expected_id) {
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, fs.OpenForRead(path));
  Result<kv::ChunkEntry> entry = ReadOpenKvFile(*file, expected_fingerprint, expected_id);
  if (!entry.ok()) return entry.status().WithContext(path);
  return entry;
}

}  // namespace reprise::store
