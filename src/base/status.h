// Status and Result<T> (the public reprise/status.h) plus what only the library's own code
// uses: ErrnoError and the REPRISE_RETURN_IF_ERROR / REPRISE_ASSIGN_OR_RETURN macros.
#pragma once

#include <string_view>

#include "reprise/status.h"

namespace reprise {

// An IoError whose message ends with strerror(errno_value).
Status ErrnoError(std::string_view what, int errno_value);

namespace internal {
inline const Status& AsStatus(const Status& status) { return status; }
template <typename T>
const Status& AsStatus(const Result<T>& result) {
  return result.status();
}
}  // namespace internal

}  // namespace reprise

#define REPRISE_CONCAT_INNER_(a, b) a##b
#define REPRISE_CONCAT_(a, b) REPRISE_CONCAT_INNER_(a, b)

// Returns the Status of `expr` (a Status or a Result) from the enclosing function when it is
// not ok.
#define REPRISE_RETURN_IF_ERROR(expr)                                              \
  do {                                                                             \
    const auto& reprise_status_or_result_ = (expr);                                \
    if (!::reprise::internal::AsStatus(reprise_status_or_result_).ok())            \
      return ::reprise::internal::AsStatus(reprise_status_or_result_);             \
  } while (false)

// `REPRISE_ASSIGN_OR_RETURN(auto x, F())` declares x from F()'s value, or returns its Status.
#define REPRISE_ASSIGN_OR_RETURN(lhs, expr) \
  REPRISE_ASSIGN_OR_RETURN_IMPL_(REPRISE_CONCAT_(reprise_result_, __LINE__), lhs, expr)
#define REPRISE_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                                   \
  if (!result.has_value()) return result.status();        \
  lhs = std::move(result).value()
