// The one table from Reprise's status codes to HTTP statuses, and OpenAI's error body:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": null, "code": ...}}
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "reprise/status.h"

namespace reprise::server {

struct HttpError {
  int http_status = 500;
  std::string body;  // OpenAI's error JSON
};

// InvalidArgument 400, NotFound 404, ResourceExhausted 429, Unavailable 503, Cancelled 499,
// Unimplemented 501, the rest (Corrupt, IoError, Internal) 500.
int HttpStatusOf(StatusCode code);

// The error body for `status` answered with `http_status`; `code` is OpenAI's machine-readable
// code (e.g. "invalid_api_key", "model_not_found"), empty = null.
std::string ErrorBody(int http_status, std::string_view message, std::string_view code = "");

HttpError ErrorFromStatus(const Status& status);

}  // namespace reprise::server
