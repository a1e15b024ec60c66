#include "store/remote_tier.h"

#include <cinttypes>
#include <cstdio>

namespace reprise::store {
namespace {

std::string Hex64(uint64_t value) {
  char out[17];
  std::snprintf(out, sizeof(out), "%016" PRIx64, value);
  return out;
}

// The namespace inside a hash tag: unambiguous, and never ending the tag early.
std::string EscapeNamespace(std::string_view name_space) {
  std::string out;
  out.reserve(name_space.size());
  for (const char c : name_space) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e || c == '%' || c == '{' || c == '}' || c == ':') {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

std::string NamespacePrefix(std::string_view name_space) {
  return "reprise:{" + EscapeNamespace(name_space) + "}:";
}

}  // namespace

Status ValidateRemoteOptions(const RemoteOptions& options) {
  if (options.timeout_ms < 1 || options.timeout_ms > 60000) {
    return InvalidArgumentError("remote timeout must be in [1, 60000] ms, not " +
                                std::to_string(options.timeout_ms));
  }
  if (options.ttl_seconds < 0) {
    return InvalidArgumentError("remote TTL must be >= 0 s (0: no expiry), not " +
                                std::to_string(options.ttl_seconds));
  }
  if (options.max_connections < 1 || options.max_connections > 256) {
    return InvalidArgumentError("remote connections must be in [1, 256]");
  }
  if (options.backoff_initial_ms < 1 || options.backoff_max_ms < options.backoff_initial_ms) {
    return InvalidArgumentError("remote backoff needs 1 <= initial <= max");
  }
  return Status::Ok();
}

std::string RemoteChunkKey(std::string_view name_space, uint64_t model_fingerprint,
                           kv::ChunkId chunk_id) {
  return NamespacePrefix(name_space) + "kv:" + Hex64(model_fingerprint) + ":" + Hex64(chunk_id);
}

std::string RemoteContentKey(std::string_view name_space, uint64_t model_fingerprint,
                             kv::ContentHash content) {
  return NamespacePrefix(name_space) + "content:" + Hex64(model_fingerprint) + ":" +
         Hex64(content);
}

std::string RemoteNamespacePattern(std::string_view name_space) {
  return NamespacePrefix(name_space) + "*";
}

std::string EncodeRemoteChunkId(kv::ChunkId id) { return Hex64(id); }

std::optional<kv::ChunkId> DecodeRemoteChunkId(std::string_view value) {
  if (value.size() != 16) return std::nullopt;
  uint64_t id = 0;
  for (const char c : value) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    id = (id << 4) | static_cast<uint64_t>(digit);
  }
  return id;
}

}  // namespace reprise::store
