// REPRISE_CHECK and REPRISE_DCHECK: invariants whose failure is a bug, not an error.
//
// A failed CHECK prints the condition, the place and any streamed message, then aborts in
// every build. DCHECK does the same in debug builds and compiles to nothing (its operands are
// not evaluated) when NDEBUG is defined. Kernels use DCHECK only.
#pragma once

#include <sstream>

namespace reprise::internal {

// Collects the streamed message of a failed check and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* condition, const char* file, int line);
  [[noreturn]] ~CheckFailure();
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;

  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Turns the stream expression into void so that it fits the ternary in the macros.
struct CheckVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace reprise::internal

#define REPRISE_CHECK(condition)                  \
  (condition) ? (void)0                           \
              : ::reprise::internal::CheckVoidify() & \
                    ::reprise::internal::CheckFailure(#condition, __FILE__, __LINE__).stream()

#define REPRISE_CHECK_EQ(a, b) REPRISE_CHECK((a) == (b)) << (a) << " vs " << (b) << " "
#define REPRISE_CHECK_LE(a, b) REPRISE_CHECK((a) <= (b)) << (a) << " vs " << (b) << " "
#define REPRISE_CHECK_LT(a, b) REPRISE_CHECK((a) < (b)) << (a) << " vs " << (b) << " "

#ifdef NDEBUG
#define REPRISE_DCHECK(condition) \
  while (false) REPRISE_CHECK(condition)
#else
#define REPRISE_DCHECK(condition) REPRISE_CHECK(condition)
#endif
