// How the cache commands read and print the names of a KV store: chunk ids and namespaces.
//
// Chunk ids are 64-bit and always hex on the command line, as `cache ls` prints them; what
// the user typed is echoed back as typed. Namespace names come from apps and old stores and
// may hold any bytes: printed names escape everything that is not printable UTF-8, so a name
// cannot break a listing's lines or the terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace reprise::cli {

// The chunk id in `text`: 1 to 16 hex digits, with an optional 0x prefix. Errors:
// InvalidArgument (empty, not hex, more than 64 bits), with `text` in the message.
Result<uint64_t> ParseChunkId(std::string_view text);

// `id` as `cache ls` prints it: 16 lowercase hex digits.
std::string FormatChunkId(uint64_t id);

// `name` for a terminal: printable ASCII and valid multi-byte UTF-8 stay as they are; a
// backslash becomes "\\", \n \t \r their C escapes, every other byte "\xNN".
std::string EscapeName(std::string_view name);

// A namespace name for new chunks: store::ValidateNamespaceName (non-empty, at most
// store::kMaxNamespaceNameBytes, valid UTF-8 without control characters), with the escaped
// name in the message. Errors: InvalidArgument.
Status CheckNamespaceName(std::string_view name);

}  // namespace reprise::cli
