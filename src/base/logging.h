// Minimal leveled logging to stderr: REPRISE_LOG(kInfo) << "loaded " << n << " tensors";
//
// Thread-safe: each message is formatted locally and written with one call under a lock.
// The level is process-wide; cli/ sets it from flags (library code never reads the
// environment).
#pragma once

#include <sstream>

namespace reprise {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kSilent = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
bool IsLogEnabled(LogLevel level);

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace reprise

#define REPRISE_LOG(level)                                                  \
  !::reprise::IsLogEnabled(::reprise::LogLevel::level)                      \
      ? (void)0                                                             \
      : ::reprise::internal::LogVoidify() &                                 \
            ::reprise::internal::LogMessage(::reprise::LogLevel::level, __FILE__, __LINE__) \
                .stream()
