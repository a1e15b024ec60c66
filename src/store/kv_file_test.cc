// KV files: round trips for both codecs, and every way a file can be damaged — each
// truncation length, each single-byte flip, wrong fingerprint or id, forged headers with
// valid checksums — reads as Corrupt, never as a crash or wrong KV.
#include "store/kv_file.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <cstring>

#include "base/float16.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::SameChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x1234567890abcdefull;

std::vector<uint8_t> Serialize(const kv::ChunkEntry& entry, KvCodec codec) {
  auto bytes = SerializeKvFile(entry, codec, kFingerprint);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

void PutU32(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
void PutU64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}
// Re-seals a forged header (and payload) so that only the semantic checks can catch it.
void Reseal(std::vector<uint8_t>& bytes) {
  PutU64(bytes, 56, bytes.size() - kKvFileHeaderBytes);
  PutU64(bytes, 64,
         XXH3_64bits(bytes.data() + kKvFileHeaderBytes, bytes.size() - kKvFileHeaderBytes));
  PutU64(bytes, 72, XXH3_64bits(bytes.data(), 72));
}

TEST(KvFileTest, F16RoundTripIsExact) {
  const kv::ChunkEntry entry = MakeTestChunk(2, TestShape{}, kFingerprint, 77, "héllo, wörld");
  const auto bytes = Serialize(entry, KvCodec::kF16);
  auto header = ParseKvFileHeader(bytes);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->codec, KvCodec::kF16);
  EXPECT_EQ(header->chunk_id, entry.id);
  EXPECT_EQ(header->parent_id, 77u);
  EXPECT_EQ(header->payload_bytes, bytes.size() - kKvFileHeaderBytes);
  auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(SameChunk(*parsed, entry));
  // Without an expected id too; an empty chunk and odd exact flags round-trip as well.
  EXPECT_TRUE(ParseKvFile(bytes, kFingerprint, std::nullopt).ok());
  const kv::ChunkEntry empty = MakeTestChunk(3, TestShape{.num_tokens = 0}, kFingerprint);
  auto parsed_empty = ParseKvFile(Serialize(empty, KvCodec::kF16), kFingerprint, empty.id);
  ASSERT_TRUE(parsed_empty.ok()) << parsed_empty.status().ToString();
  EXPECT_TRUE(SameChunk(*parsed_empty, empty));
}

TEST(KvFileTest, Int8RoundTripIsClose) {
  const TestShape shape{.num_layers = 3, .num_kv_heads = 2, .head_dim = 64, .num_tokens = 17};
  const kv::ChunkEntry entry = MakeTestChunk(4, shape, kFingerprint, kv::kRootChunkId, "text");
  const auto bytes = Serialize(entry, KvCodec::kInt8);
  EXPECT_EQ(bytes.size(), kKvFileHeaderBytes + 17 * 8 + 4 + 4 + 4 +  // tokens, text, namespace
                              12 +                                   // provenance
                              2 * *EncodedTensorBytes(KvCodec::kInt8, 3 * 2 * 17, 64));
  auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tokens, entry.tokens);
  EXPECT_EQ(parsed->kv->positions, entry.kv->positions);
  EXPECT_EQ(parsed->text, "text");
  double error = 0, norm = 0;
  for (size_t i = 0; i < entry.kv->k.size(); ++i) {
    for (const auto* pair : {&entry.kv->k, &entry.kv->v}) {
      const double x = F16ToF32((*pair)[i]);
      const double y = F16ToF32((pair == &entry.kv->k ? parsed->kv->k : parsed->kv->v)[i]);
      error += (x - y) * (x - y);
      norm += x * x;
    }
  }
  EXPECT_LT(std::sqrt(error / norm), 0.01);
}

TEST(KvFileTest, Int8RequestWithOddHeadDimStoresF16) {
  const kv::ChunkEntry entry = MakeTestChunk(5, TestShape{.head_dim = 12}, kFingerprint);
  const auto bytes = Serialize(entry, KvCodec::kInt8);
  EXPECT_EQ(ParseKvFileHeader(bytes)->codec, KvCodec::kF16);
  auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(SameChunk(*parsed, entry));
}

TEST(KvFileTest, EveryTruncationIsCorrupt) {
  for (const KvCodec codec : {KvCodec::kF16, KvCodec::kInt8}) {
    const kv::ChunkEntry entry = MakeTestChunk(6, TestShape{}, kFingerprint, 0, "abc");
    const auto bytes = Serialize(entry, codec);
    for (size_t length = 0; length < bytes.size(); ++length) {
      const auto result = ParseKvFile(std::span(bytes).first(length), kFingerprint, entry.id);
      ASSERT_EQ(result.status().code(), StatusCode::kCorrupt) << "length " << length;
    }
    std::vector<uint8_t> longer = bytes;
    longer.push_back(0);
    EXPECT_EQ(ParseKvFile(longer, kFingerprint, entry.id).status().code(), StatusCode::kCorrupt);
  }
}

TEST(KvFileTest, EverySingleByteFlipIsDetected) {
  for (const KvCodec codec : {KvCodec::kF16, KvCodec::kInt8}) {
    const kv::ChunkEntry entry = MakeTestChunk(7, TestShape{}, kFingerprint, 0, "xyz");
    const auto bytes = Serialize(entry, codec);
    for (size_t at = 0; at < bytes.size(); ++at) {
      for (const uint8_t mask : {0x01, 0x80, 0xff}) {
        std::vector<uint8_t> damaged = bytes;
        damaged[at] ^= mask;
        const auto result = ParseKvFile(damaged, kFingerprint, entry.id);
        ASSERT_EQ(result.status().code(), StatusCode::kCorrupt)
            << "byte " << at << " mask " << int{mask};
      }
    }
  }
}

// Large tensors are read and decoded in pieces; the result equals decoding the whole tensor
// at once, and damage in a late piece is still caught.
TEST(KvFileTest, LargeChunksAreReadInPiecesWithTheSameResult) {
  const TestShape shape{.num_layers = 4, .num_kv_heads = 4, .head_dim = 128, .num_tokens = 600};
  const kv::ChunkEntry entry = MakeTestChunk(9, shape, kFingerprint, 0, "large");
  for (const KvCodec codec : {KvCodec::kF16, KvCodec::kInt8}) {
    auto bytes = Serialize(entry, codec);
    auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    kv::ChunkKv whole;
    whole.num_layers = shape.num_layers;
    whole.num_kv_heads = shape.num_kv_heads;
    whole.head_dim = shape.head_dim;
    whole.num_tokens = shape.num_tokens;
    ASSERT_TRUE(DecodeKv(EncodeKv(*entry.kv, codec), &whole).ok());
    EXPECT_TRUE(parsed->kv->k == whole.k) << KvCodecName(codec);
    EXPECT_TRUE(parsed->kv->v == whole.v) << KvCodecName(codec);
    bytes[bytes.size() - 100] ^= 0x10;  // in the last rows of V
    EXPECT_EQ(ParseKvFile(bytes, kFingerprint, entry.id).status().code(), StatusCode::kCorrupt);
  }
}

TEST(KvFileTest, WrongFingerprintOrIdIsCorrupt) {
  const kv::ChunkEntry entry = MakeTestChunk(8, TestShape{}, kFingerprint);
  const auto bytes = Serialize(entry, KvCodec::kF16);
  EXPECT_EQ(ParseKvFile(bytes, kFingerprint + 1, entry.id).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseKvFile(bytes, kFingerprint, entry.id + 1).status().code(), StatusCode::kCorrupt);
}

TEST(KvFileTest, ForgedHeadersWithValidChecksumsAreCorrupt) {
  const kv::ChunkEntry entry = MakeTestChunk(9, TestShape{}, kFingerprint, 0, "t");
  const auto good = Serialize(entry, KvCodec::kF16);
  const auto expect_corrupt = [&](std::vector<uint8_t> bytes, const char* what) {
    Reseal(bytes);
    EXPECT_EQ(ParseKvFile(bytes, kFingerprint, std::nullopt).status().code(), StatusCode::kCorrupt)
        << what;
  };
  {  // Dimensions whose product overflows 64 bits.
    auto bytes = good;
    PutU32(bytes, 40, kMaxKvFileLayers);
    PutU32(bytes, 44, kMaxKvFileKvHeads);
    PutU32(bytes, 48, kMaxKvFileHeadDim);
    PutU32(bytes, 52, kMaxKvFileTokens);
    expect_corrupt(bytes, "huge shape");
  }
  {  // Beyond the limits.
    auto bytes = good;
    PutU32(bytes, 48, kMaxKvFileHeadDim + 1);
    expect_corrupt(bytes, "head_dim limit");
    bytes = good;
    PutU32(bytes, 40, 0);
    expect_corrupt(bytes, "zero layers");
  }
  {  // A shape that does not add up to the payload.
    auto bytes = good;
    PutU32(bytes, 52, 5);
    expect_corrupt(bytes, "tokens");
  }
  {  // Text length past the end; and unknown codec, flags and version.
    auto bytes = good;
    PutU32(bytes, kKvFileHeaderBytes + 4 * 8, 0xffffffffu);
    expect_corrupt(bytes, "text length");
    bytes = good;
    bytes[6] = 9;
    expect_corrupt(bytes, "codec");
    bytes = good;
    bytes[7] = 2;
    expect_corrupt(bytes, "flags");
    bytes = good;
    bytes[4] = kKvFileVersion + 1;
    expect_corrupt(bytes, "version");
    bytes = good;
    bytes[4] = 0;
    expect_corrupt(bytes, "version 0");
    // A namespace length past the end (after 4 tokens, 4 positions, an empty text length and
    // the one-byte text "t").
    bytes = good;
    PutU32(bytes, kKvFileHeaderBytes + 4 * 8 + 4 + 1, 0x7fffffffu);
    expect_corrupt(bytes, "namespace length");
  }
  {  // int8 codec with a head_dim it cannot use (8 -> 6 keeps the total the same: 2*2*4 rows).
    const kv::ChunkEntry int8_entry = MakeTestChunk(10, TestShape{}, kFingerprint);
    auto bytes = Serialize(int8_entry, KvCodec::kInt8);
    PutU32(bytes, 48, 6);
    expect_corrupt(bytes, "int8 head_dim");
  }
  {  // A NaN scale inside a resealed payload.
    const kv::ChunkEntry int8_entry = MakeTestChunk(11, TestShape{}, kFingerprint);
    auto bytes = Serialize(int8_entry, KvCodec::kInt8);
    const size_t k_at = kKvFileHeaderBytes + 4 * 8 + 4 + 4 + 12;  // tokens, text, namespace,
                                                                  // provenance
    const float nan = std::nanf("");
    std::memcpy(bytes.data() + k_at, &nan, 4);
    expect_corrupt(bytes, "NaN scale");
  }
}

// A file of an older version of `entry` (Serialize writes an empty namespace): version 2 has
// no provenance, version 1 no namespace either.
std::vector<uint8_t> OlderVersionFile(const kv::ChunkEntry& entry, KvCodec codec, int version) {
  auto bytes = Serialize(entry, codec);
  const size_t namespace_at = kKvFileHeaderBytes + entry.tokens.size() * 8 + 4 + entry.text.size();
  const size_t from = version == 1 ? namespace_at : namespace_at + 4;
  bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(from),
              bytes.begin() + static_cast<std::ptrdiff_t>(namespace_at) + 4 + 12);
  bytes[4] = static_cast<uint8_t>(version);
  bytes[5] = 0;
  Reseal(bytes);
  return bytes;
}

std::vector<uint8_t> VersionOneFile(const kv::ChunkEntry& entry, KvCodec codec) {
  return OlderVersionFile(entry, codec, 1);
}

TEST(KvFileTest, ProvenanceIsKeptAndOlderFilesReadAsUnknown) {
  kv::ChunkEntry entry = MakeTestChunk(15, TestShape{}, kFingerprint, 5, "made somehow");
  entry.provenance = kv::KvProvenance{kv::KvOrigin::kBlended, 0.25f, 1};
  const auto bytes = Serialize(entry, KvCodec::kF16);
  auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->provenance, entry.provenance);
  EXPECT_EQ(kv::DescribeProvenance(parsed->provenance), "blended r=0.25 @layer 1");
  for (const int version : {1, 2}) {
    auto old = ParseKvFile(OlderVersionFile(entry, KvCodec::kF16, version), kFingerprint, entry.id);
    ASSERT_TRUE(old.ok()) << version << ": " << old.status().ToString();
    EXPECT_EQ(old->provenance.origin, kv::KvOrigin::kUnknown) << version;
    EXPECT_TRUE(SameChunk(*old, entry)) << version;
  }
  // A provenance no writer makes is Corrupt, never trusted.
  const size_t at = kKvFileHeaderBytes + entry.tokens.size() * 8 + 4 + entry.text.size() + 4;
  const auto forged = [&](size_t offset, uint32_t value) {
    auto b = bytes;
    PutU32(b, at + offset, value);
    Reseal(b);
    return ParseKvFile(b, kFingerprint, entry.id).status().code();
  };
  EXPECT_EQ(forged(0, 3), StatusCode::kCorrupt);           // origin
  EXPECT_EQ(forged(0, 0x0102), StatusCode::kCorrupt);      // padding
  EXPECT_EQ(forged(4, 0x7fc00000), StatusCode::kCorrupt);  // r NaN
  EXPECT_EQ(forged(4, 0x40000000), StatusCode::kCorrupt);  // r = 2
  EXPECT_EQ(forged(8, 0xfffffffe), StatusCode::kCorrupt);  // check layer -2
  EXPECT_EQ(forged(8, 1000), StatusCode::kCorrupt);        // beyond the layers
  EXPECT_EQ(forged(8, 0xffffffff), StatusCode::kOk);       // -1: none
}

TEST(KvFileTest, VersionOneFilesAreStillRead) {
  const kv::ChunkEntry entry = MakeTestChunk(12, TestShape{}, kFingerprint, 5, "old file");
  for (const KvCodec codec : {KvCodec::kF16, KvCodec::kInt8}) {
    const auto bytes = VersionOneFile(entry, codec);
    auto header = ParseKvFileHeader(bytes);
    ASSERT_TRUE(header.ok()) << header.status().ToString();
    EXPECT_EQ(header->version, 1);
    auto parsed = ParseKvFile(bytes, kFingerprint, entry.id);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->tokens, entry.tokens);
    EXPECT_EQ(parsed->text, entry.text);
    if (codec == KvCodec::kF16) {
      EXPECT_TRUE(SameChunk(*parsed, entry));
    }
  }
}

TEST(KvFileTest, MetadataCarriesEverythingARowNeeds) {
  testing_support::TempDir temp;
  auto fs = NewPosixFileSystem();
  const kv::ChunkEntry entry = MakeTestChunk(14, TestShape{}, kFingerprint, 9, "words here");
  const std::string name = KvFileName("app \xc3\xa9", entry.id);
  auto info = WriteKvFile(*fs, temp.path(), name, entry, KvCodec::kInt8, kFingerprint,
                          "app \xc3\xa9");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto meta = ReadKvFileMetadata(*fs, temp.path() + "/" + name);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_TRUE(meta->has_namespace);
  EXPECT_EQ(meta->name_space, "app \xc3\xa9");
  EXPECT_EQ(meta->header.chunk_id, entry.id);
  EXPECT_EQ(meta->header.parent_id, 9u);
  EXPECT_EQ(meta->header.content_hash, entry.content);
  EXPECT_EQ(meta->header.exact, entry.exact);
  EXPECT_EQ(meta->header.codec, info->codec);
  EXPECT_EQ(meta->header.model_fingerprint, kFingerprint);
  EXPECT_EQ(meta->header.payload_checksum, info->payload_checksum);
  EXPECT_EQ(meta->file_bytes, info->file_bytes);
  EXPECT_EQ(meta->tokens, entry.tokens);
  EXPECT_EQ(meta->text, "words here");
  // The full read still matches.
  auto read = ReadKvFile(*fs, temp.path() + "/" + name, kFingerprint, entry.id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->text, "words here");
  // A version 1 file has no namespace to tell.
  ASSERT_TRUE(fs->WriteFile(temp.path() + "/old.rpkv", VersionOneFile(entry, KvCodec::kF16), false)
                  .ok());
  auto old = ReadKvFileMetadata(*fs, temp.path() + "/old.rpkv");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_FALSE(old->has_namespace);
  EXPECT_EQ(old->tokens, entry.tokens);
}

TEST(KvFileTest, TemporaryNamesAreUniquePerCall) {
  const std::string a = KvTempFileName("0123-4567.rpkv");
  const std::string b = KvTempFileName("0123-4567.rpkv");
  EXPECT_NE(a, b);
  EXPECT_TRUE(a.starts_with("0123-4567.")) << a;
  EXPECT_TRUE(a.ends_with(".rpkv.tmp")) << a;
}

TEST(KvFileTest, SerializeRejectsInconsistentEntries) {
  kv::ChunkEntry entry = MakeTestChunk(12, TestShape{}, kFingerprint);
  kv::ChunkEntry no_kv = entry;
  no_kv.kv = nullptr;
  EXPECT_EQ(SerializeKvFile(no_kv, KvCodec::kF16, 1).status().code(), StatusCode::kInvalidArgument);
  kv::ChunkEntry short_tokens = entry;
  short_tokens.tokens.pop_back();
  EXPECT_EQ(SerializeKvFile(short_tokens, KvCodec::kF16, 1).status().code(),
            StatusCode::kInvalidArgument);
  auto bad_kv = std::make_shared<kv::ChunkKv>(*entry.kv);
  bad_kv->v.pop_back();
  kv::ChunkEntry bad = entry;
  bad.kv = bad_kv;
  EXPECT_EQ(SerializeKvFile(bad, KvCodec::kF16, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(KvFileTest, WriteAndReadThroughTheFileSystem) {
  testing_support::TempDir temp;
  auto fs = NewPosixFileSystem();
  const kv::ChunkEntry entry = MakeTestChunk(13, TestShape{}, kFingerprint, 0, "doc");
  const std::string name = KvFileName("ns", entry.id);
  EXPECT_EQ(name.size(), 16 + 1 + 16 + kKvFileSuffix.size());
  EXPECT_NE(KvFileName("other", entry.id), name);
  auto info = WriteKvFile(*fs, temp.path(), name, entry, KvCodec::kInt8, kFingerprint);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->codec, KvCodec::kInt8);
  EXPECT_EQ(*fs->FileSize(temp.path() + "/" + name), info->file_bytes);
  EXPECT_EQ(*fs->ListDir(temp.path()), std::vector<std::string>{name});  // no temporary left
  auto read = ReadKvFile(*fs, temp.path() + "/" + name, kFingerprint, entry.id);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->tokens, entry.tokens);
  EXPECT_EQ(ReadKvFile(*fs, temp.path() + "/none.rpkv", kFingerprint, std::nullopt).status().code(),
            StatusCode::kNotFound);
  const Status wrong = ReadKvFile(*fs, temp.path() + "/" + name, 5, std::nullopt).status();
  EXPECT_EQ(wrong.code(), StatusCode::kCorrupt);
  EXPECT_NE(wrong.message().find(name), std::string::npos) << wrong.message();
}

}  // namespace
}  // namespace reprise::store
