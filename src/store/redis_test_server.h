// RedisTestServer: a real redis-server for tests, started on loopback at a free port with a
// temporary folder, no persistence, and stopped, paused (SIGSTOP), resumed and restarted by
// the test. Tests skip when redis-server is not installed (RedisServerPath() empty).
// Header-only; included by tests only. Confined to one thread.
#pragma once

#include <hiredis.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_client.h"

namespace reprise::store::test_util {

// The redis-server program in PATH, or "".
inline std::string RedisServerPath() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/redis-server";
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

class RedisTestServer {
 public:
  // `extra` are more "--name value" arguments (e.g. maxmemory).
  explicit RedisTestServer(std::vector<std::string> extra = {}) : extra_(std::move(extra)) {
    char dir[] = "/tmp/reprise-redis-XXXXXX";
    if (mkdtemp(dir) != nullptr) dir_ = dir;
  }
  ~RedisTestServer() {
    Kill();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }
  RedisTestServer(const RedisTestServer&) = delete;
  RedisTestServer& operator=(const RedisTestServer&) = delete;

  // Starts the server (on the same port as before, when restarting); true once it answers
  // PING.
  bool Start() {
    if (dir_.empty() || RedisServerPath().empty()) return false;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (!fixed_port_) port_ = testing_support::FreeLoopbackPort();
      if (port_ == 0) return false;
      if (Launch() && WaitForPing(std::chrono::seconds(10))) return true;
      Kill();
      if (fixed_port_) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  // SIGTERM and wait (the server saves nothing: no persistence).
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGTERM);
    Reap();
  }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    Reap();
  }
  void Pause() {
    if (pid_ > 0) kill(pid_, SIGSTOP);
  }
  void Resume() {
    if (pid_ > 0) kill(pid_, SIGCONT);
  }
  // Stops and starts again on the same port (clients reconnect to the same URL).
  bool Restart() {
    Stop();
    fixed_port_ = true;
    return Start();
  }
  // Runs one command on a connection of its own; the reply as text ("" on failure).
  std::string Run(const std::vector<std::string>& args) const {
    redisContext* c = redisConnect("127.0.0.1", port_);
    if (c == nullptr) return "";
    std::string out;
    if (c->err == 0) {
      std::vector<const char*> argv;
      std::vector<size_t> lengths;
      for (const std::string& a : args) {
        argv.push_back(a.data());
        lengths.push_back(a.size());
      }
      auto* reply = static_cast<redisReply*>(
          redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()));
      if (reply != nullptr) {
        if (reply->str != nullptr) out.assign(reply->str, reply->len);
        if (reply->type == REDIS_REPLY_INTEGER) out = std::to_string(reply->integer);
        if (reply->type == REDIS_REPLY_ARRAY) {
          for (size_t i = 0; i < reply->elements; ++i) {
            if (reply->element[i]->str != nullptr) {
              out.append(reply->element[i]->str, reply->element[i]->len);
              out += '\n';
            }
          }
        }
        freeReplyObject(reply);
      }
    }
    redisFree(c);
    return out;
  }

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0; }

 private:
  bool Launch() {
    std::vector<std::string> args = {RedisServerPath(),
                                     "--port", std::to_string(port_),
                                     "--bind", "127.0.0.1",
                                     "--dir", dir_,
                                     "--save", "",
                                     "--appendonly", "no",
                                     "--daemonize", "no",
                                     "--logfile", dir_ + "/redis.log"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = fork();
    if (pid_ < 0) {
      pid_ = 0;
      return false;
    }
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return true;
  }

  bool WaitForPing(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return false;
      }
      // A server with a password answers, refusing.
      const std::string pong = Run({"PING"});
      if (pong == "PONG" || pong.starts_with("NOAUTH")) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Reap() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }

  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  bool fixed_port_ = false;
  pid_t pid_ = 0;
};

}  // namespace reprise::store::test_util
