#include "base/logging.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "base/mutex.h"

namespace reprise {
namespace {

// Relaxed: the level is a filter; a message racing a level change may go either way.
std::atomic<int> g_log_level{static_cast<int>(LogLevel::kWarning)};
Mutex g_log_mutex;

const char* LevelTag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "D";
    case LogLevel::kInfo:
      return "I";
    case LogLevel::kWarning:
      return "W";
    case LogLevel::kError:
      return "E";
    case LogLevel::kSilent:
      return "";
  }
  return "?";
}

}  // namespace

void SetLogLevel(LogLevel level) {
  g_log_level.store(static_cast<int>(level), std::memory_order_relaxed);
}
LogLevel GetLogLevel() {
  return static_cast<LogLevel>(g_log_level.load(std::memory_order_relaxed));
}
bool IsLogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_log_level.load(std::memory_order_relaxed) &&
         level != LogLevel::kSilent;
}

namespace internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  const char* base = std::strrchr(file, '/');
  stream_ << "[" << LevelTag(level) << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << "\n";
  const std::string text = stream_.str();
  MutexLock lock(g_log_mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
  (void)level_;
}

}  // namespace internal
}  // namespace reprise
