// The body of a request sent with a Content-Encoding (RFC 9110 §8.4): gzip (or x-gzip) and
// deflate are inflated here, a piece at a time, and the inflation stops as soon as the output
// passes the server's body limit — the limit bounds what a body inflates to, not only its
// bytes on the wire, so 200 KB of gzip cannot become a 200 MB prompt. identity is the body as
// it came. Other codings, and more than one coding, are refused (415).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_errors.h"

namespace reprise::server {

// Replaces `body` by what it decodes to under `content_encoding` (the header's value, "" when
// absent), at most `max_bytes` of it. nullopt when it decoded; otherwise the answer to give:
// 415 (a coding not supported), 413 (it inflates past max_bytes), 400 (not valid gzip or
// deflate data).
std::optional<HttpError> DecodeContentEncoding(std::string_view content_encoding, std::string& body,
                                               int64_t max_bytes);

}  // namespace reprise::server
