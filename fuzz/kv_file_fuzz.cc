// libFuzzer target for the KV chunk file parser (store/kv_file.h): any byte string must parse
// or fail with Corrupt — never crash, hang, over-allocate or read out of bounds.
//
// A mutated file almost always fails its XXH3 checksums, which would stop every input at the
// header. So when the first input byte is odd, the target first repairs the file the way a
// writer would (payload size, payload checksum, the expected fingerprint, header checksum) and
// the rest of the parser sees the mutation. The seed corpus (make_fuzz_seeds) holds valid
// files of both codecs with that byte set.
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "base/logging.h"
#include "store/kv_file.h"

namespace {

constexpr uint64_t kFingerprint = 0x5EED5EED5EED5EEDull;  // the seeds' fingerprint

void PutU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

void Trap(bool failed) {
  if (failed) __builtin_trap();
}

}  // namespace

// Library warnings (e.g. a dropped special token id) would flood the output, once per input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  reprise::SetLogLevel(reprise::LogLevel::kSilent);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool repair = (data[0] & 1) != 0;
  const bool expect_id = (data[0] & 2) != 0;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (repair && bytes.size() >= reprise::store::kKvFileHeaderBytes) {
    uint8_t* h = bytes.data();
    const size_t payload = bytes.size() - reprise::store::kKvFileHeaderBytes;
    PutU64(h + 8, kFingerprint);
    PutU64(h + 56, payload);
    PutU64(h + 64, XXH3_64bits(h + reprise::store::kKvFileHeaderBytes, payload));
    PutU64(h + 72, XXH3_64bits(h, 72));
  }
  const std::span<const uint8_t> span(bytes);
  auto header = reprise::store::ParseKvFileHeader(span);
  std::optional<reprise::kv::ChunkId> id;
  if (expect_id && header.ok()) id = header->chunk_id;
  auto entry = reprise::store::ParseKvFile(span, kFingerprint, id);
  if (!entry.ok()) {
    Trap(entry.error().code() != reprise::StatusCode::kCorrupt);
    return 0;
  }
  // A file that parses has a header that parses, and what it holds is consistent with it.
  Trap(!header.ok());
  Trap(entry->id != header->chunk_id || entry->parent != header->parent_id);
  Trap(entry->tokens.size() != header->num_tokens);
  Trap(entry->kv == nullptr);
  const reprise::kv::ChunkKv& kv = *entry->kv;
  Trap(kv.num_tokens != static_cast<int>(header->num_tokens) ||
       kv.num_layers != static_cast<int>(header->num_layers) ||
       kv.num_kv_heads != static_cast<int>(header->num_kv_heads) ||
       kv.head_dim != static_cast<int>(header->head_dim));
  Trap(kv.positions.size() != header->num_tokens);
  const size_t values = static_cast<size_t>(kv.num_layers) * static_cast<size_t>(kv.num_kv_heads) *
                        static_cast<size_t>(kv.num_tokens) * static_cast<size_t>(kv.head_dim);
  Trap(kv.k.size() != values || kv.v.size() != values);
  // Serializing what was read gives a file that parses to the same entry.
  auto again = reprise::store::SerializeKvFile(*entry, header->codec, kFingerprint);
  if (again.ok()) {
    auto reparsed = reprise::store::ParseKvFile(*again, kFingerprint, entry->id);
    Trap(!reparsed.ok());
    Trap(reparsed->tokens != entry->tokens || reparsed->text != entry->text);
  }
  return 0;
}
