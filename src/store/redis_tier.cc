#include "store/redis_tier.h"

#include <hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>

namespace reprise::store {
namespace {

// Blocks SIGPIPE on this thread while hiredis writes, and consumes one it raised, so that a
// server closing the connection cannot kill the process.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~ScopedSigpipeBlock() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec no_wait{0, 0};
        sigtimedwait(&pipe_, nullptr, &no_wait);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

Result<std::string> PercentDecode(std::string_view in, std::string_view what) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    int value = 0;
    if (i + 2 >= in.size()) {
      return InvalidArgumentError("remote URL: a bad %-escape in the " + std::string(what));
    }
    const auto [end, error] = std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16);
    if (error != std::errc() || end != in.data() + i + 3) {
      return InvalidArgumentError("remote URL: a bad %-escape in the " + std::string(what));
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

Result<int> ParseNumber(std::string_view text, int min, int max, std::string_view what) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return InvalidArgumentError("remote URL: " + std::string(what) + " must be a number in [" +
                                std::to_string(min) + ", " + std::to_string(max) + "], not '" +
                                std::string(text) + "'");
  }
  return value;
}

// Runs one command (argv form: binary-safe). Null when the connection failed.
Reply Command(redisContext* context, const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(
      context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
}

}  // namespace

void RedisTier::ContextDeleter::operator()(redisContext* context) const { redisFree(context); }

Result<RedisUrl> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError("remote URL must start with redis:// (redis://[user:password@]"
                                "host:port[/db])");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisUrl out;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view user_info = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = user_info.find(':');
    REPRISE_ASSIGN_OR_RETURN(out.user, PercentDecode(user_info.substr(0, colon), "user"));
    if (colon != std::string_view::npos) {
      REPRISE_ASSIGN_OR_RETURN(out.password,
                               PercentDecode(user_info.substr(colon + 1), "password"));
    }
  }
  std::string_view host_port = rest;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    host_port = rest.substr(0, slash);
    REPRISE_ASSIGN_OR_RETURN(out.db, ParseNumber(rest.substr(slash + 1), 0, 1 << 20, "db"));
  }
  std::string_view port;
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("remote URL: an IPv6 host needs its ']'");
    }
    out.host = std::string(host_port.substr(1, close - 1));
    const std::string_view after = host_port.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgumentError("remote URL: junk after the host");
      port = after.substr(1);
    }
  } else {
    const size_t colon = host_port.rfind(':');
    out.host = std::string(host_port.substr(0, colon));
    if (colon != std::string_view::npos) port = host_port.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgumentError("remote URL: no host");
  if (!port.empty() || host_port.back() == ':') {
    REPRISE_ASSIGN_OR_RETURN(out.port, ParseNumber(port, 1, 65535, "port"));
  }
  return out;
}

Result<std::unique_ptr<RedisTier>> RedisTier::Create(const RemoteOptions& options) {
  REPRISE_RETURN_IF_ERROR(ValidateRemoteOptions(options));
  REPRISE_ASSIGN_OR_RETURN(RedisUrl url, ParseRedisUrl(options.url));
  if (url.password.empty()) url.password = options.password;
  std::unique_ptr<RedisTier> tier(new RedisTier(options, std::move(url)));
  MutexLock lock(tier->mutex_);
  tier->backoff_ms_ = options.backoff_initial_ms;
  return tier;
}

RedisTier::~RedisTier() = default;

std::string RedisTier::Describe() const {
  return "redis://" + (url_.user.empty() ? "" : url_.user + "@") + url_.host + ":" +
         std::to_string(url_.port) + "/" + std::to_string(url_.db);
}

Result<RedisTier::Context> RedisTier::Connect() {
  const timeval timeout = ToTimeval(options_.timeout_ms);
  Context context(redisConnectWithTimeout(url_.host.c_str(), url_.port, timeout));
  if (context == nullptr) return UnavailableError("remote: out of memory for a connection");
  if (context->err != 0) return UnavailableError("remote " + Describe() + ": " + context->errstr);
  if (redisSetTimeout(context.get(), timeout) != REDIS_OK) {
    return UnavailableError("remote " + Describe() + ": cannot set the timeout");
  }
  const auto expect_ok = [&](const std::vector<std::string_view>& args,
                             const char* what) -> Status {
    const Reply reply = Command(context.get(), args);
    if (reply == nullptr) {
      return UnavailableError("remote " + Describe() + ": " + what + ": " + context->errstr);
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      return UnavailableError("remote " + Describe() + ": " + what + " refused: " +
                              std::string(reply->str, reply->len));
    }
    return Status::Ok();
  };
  if (!url_.password.empty()) {
    if (url_.user.empty()) {
      REPRISE_RETURN_IF_ERROR(expect_ok({"AUTH", url_.password}, "AUTH"));
    } else {
      REPRISE_RETURN_IF_ERROR(expect_ok({"AUTH", url_.user, url_.password}, "AUTH"));
    }
  }
  if (url_.db != 0) {
    const std::string db = std::to_string(url_.db);
    REPRISE_RETURN_IF_ERROR(expect_ok({"SELECT", db}, "SELECT"));
  }
  return context;
}

Result<RedisTier::Context> RedisTier::Acquire() {
  {
    MutexLock lock(mutex_);
    if (Clock::now() < retry_at_) {
      ++stats_.unavailable;
      return UnavailableError("remote " + Describe() + ": backing off after a failure");
    }
    if (!idle_.empty()) {
      Context context = std::move(idle_.back());
      idle_.pop_back();
      return context;
    }
    if (open_ >= options_.max_connections) {
      ++stats_.unavailable;
      return UnavailableError("remote " + Describe() + ": every connection is busy");
    }
    ++open_;
  }
  Result<Context> context = Connect();
  MutexLock lock(mutex_);
  if (!context.ok()) {
    --open_;
    ++stats_.unavailable;
    stats_.connected = false;
    retry_at_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
    backoff_ms_ = std::min(backoff_ms_ * 2, options_.backoff_max_ms);
    return context.status();
  }
  ++stats_.connects;
  return context;
}

void RedisTier::Release(Context context, bool healthy) {
  MutexLock lock(mutex_);
  stats_.connected = healthy;
  if (healthy) {
    backoff_ms_ = options_.backoff_initial_ms;
    idle_.push_back(std::move(context));
    return;
  }
  // The server went away or stalled: the idle connections are as suspect as this one.
  open_ -= 1 + static_cast<int>(idle_.size());
  idle_.clear();
  ++stats_.unavailable;
  retry_at_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
  backoff_ms_ = std::min(backoff_ms_ * 2, options_.backoff_max_ms);
}

Result<std::optional<std::string>> RedisTier::Get(const std::string& key) {
  {
    MutexLock lock(mutex_);
    ++stats_.gets;
  }
  ScopedSigpipeBlock no_sigpipe;
  REPRISE_ASSIGN_OR_RETURN(Context context, Acquire());
  const Reply reply = Command(context.get(), {"GET", key});
  if (reply == nullptr) {
    const std::string why = context->errstr;
    Release(std::move(context), false);
    return UnavailableError("remote " + Describe() + ": GET: " + why);
  }
  Release(std::move(context), true);
  MutexLock lock(mutex_);
  if (reply->type == REDIS_REPLY_NIL) {
    ++stats_.absent;
    return std::optional<std::string>();
  }
  if (reply->type != REDIS_REPLY_STRING) {
    ++stats_.unavailable;
    return UnavailableError("remote " + Describe() + ": GET answered " +
                            (reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len)
                                                              : "a non-string"));
  }
  ++stats_.found;
  stats_.bytes_read += static_cast<int64_t>(reply->len);
  return std::optional<std::string>(std::string(reply->str, reply->len));
}

Status RedisTier::Put(std::span<const RemotePut> puts) {
  if (puts.empty()) return Status::Ok();
  ScopedSigpipeBlock no_sigpipe;
  REPRISE_ASSIGN_OR_RETURN(Context context, Acquire());
  const std::string ttl = std::to_string(options_.ttl_seconds);
  for (const RemotePut& put : puts) {
    std::vector<const char*> argv = {"SET", put.key.data(), put.value.data()};
    std::vector<size_t> lengths = {3, put.key.size(), put.value.size()};
    if (options_.ttl_seconds > 0) {
      argv.insert(argv.end(), {"EX", ttl.data()});
      lengths.insert(lengths.end(), {2, ttl.size()});
    }
    if (put.only_if_absent) {
      argv.push_back("NX");
      lengths.push_back(2);
    }
    if (redisAppendCommandArgv(context.get(), static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      Release(std::move(context), false);
      return UnavailableError("remote " + Describe() + ": cannot queue a SET");
    }
  }
  int64_t refused = 0, written = 0, bytes = 0;
  std::string refusal;
  for (const RemotePut& put : puts) {
    void* raw = nullptr;
    if (redisGetReply(context.get(), &raw) != REDIS_OK) {
      const std::string why = context->errstr;
      Release(std::move(context), false);
      MutexLock lock(mutex_);
      stats_.puts += written;
      stats_.bytes_written += bytes;
      return UnavailableError("remote " + Describe() + ": SET: " + why);
    }
    const Reply reply(static_cast<redisReply*>(raw));
    if (reply->type == REDIS_REPLY_ERROR) {
      ++refused;
      refusal = std::string(reply->str, reply->len);
    } else {
      ++written;  // OK, or nil for an NX that found a value: either way the key holds one
      bytes += static_cast<int64_t>(put.value.size());
    }
  }
  Release(std::move(context), true);
  MutexLock lock(mutex_);
  stats_.puts += written;
  stats_.put_refused += refused;
  stats_.bytes_written += bytes;
  if (refused > 0) {
    return ResourceExhaustedError("remote " + Describe() + " refused " + std::to_string(refused) +
                                  " values: " + refusal);
  }
  return Status::Ok();
}

RemoteTierStats RedisTier::Stats() {
  MutexLock lock(mutex_);
  return stats_;
}

}  // namespace reprise::store
