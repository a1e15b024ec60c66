#include "server/http_errors.h"

#include <nlohmann/json.hpp>

namespace reprise::server {

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kCancelled: return 499;  // the client closed the request (nginx's code)
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kCorrupt:
    case StatusCode::kIoError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

namespace {

const char* ErrorType(int http_status) {
  if (http_status == 401) return "authentication_error";
  if (http_status == 404) return "not_found_error";
  if (http_status == 429) return "rate_limit_error";
  if (http_status >= 400 && http_status < 500) return "invalid_request_error";
  return "server_error";
}

}  // namespace

std::string ErrorBody(int http_status, std::string_view message, std::string_view code) {
  using nlohmann::json;
  const json body = {{"error",
                      {{"message", std::string(message)},
                       {"type", ErrorType(http_status)},
                       {"param", nullptr},
                       {"code", code.empty() ? json(nullptr) : json(std::string(code))}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpError ErrorFromStatus(const Status& status) {
  const int http_status = HttpStatusOf(status.code());
  return HttpError{http_status, ErrorBody(http_status, status.message())};
}

}  // namespace reprise::server
