#include "base/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace reprise {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "Ok";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorrupt: return "Corrupt";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "Ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

Status ErrnoError(std::string_view what, int errno_value) {
  std::string message(what);
  message += ": ";
  message += std::strerror(errno_value);
  StatusCode code = StatusCode::kIoError;
  if (errno_value == ENOENT) code = StatusCode::kNotFound;
  if (errno_value == ENOSPC || errno_value == EDQUOT || errno_value == ENOMEM)
    code = StatusCode::kResourceExhausted;
  return Status(code, std::move(message));
}

void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "FATAL: value() of a Result holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

}  // namespace reprise
