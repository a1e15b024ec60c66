#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace reprise::internal {

CheckFailure::CheckFailure(const char* condition, const char* file, int line) {
  stream_ << file << ":" << line << ": CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "FATAL: %s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace reprise::internal
