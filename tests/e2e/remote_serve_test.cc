// Two `reprise serve` processes with store folders of their own and one redis-server (all
// started here, on loopback): server B reuses the document server A computed (cached_tokens
// at least half of B's first prompt, the answer a full prefill gives), with Redis stopped B
// still answers 200, and servers of two API keys' namespaces never reuse each other's
// chunks. Skips without redis-server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/redis_test_server.h"
#include "support/loopback_client.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using nlohmann::json;
using store::test_util::RedisServerPath;
using store::test_util::RedisTestServer;
using testing_support::LoopbackClient;
using testing_support::RawResponse;

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

const std::string kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play with her red ball "
    "in the park. One day, she saw a big dog near the tree. The dog wanted to play too. Lily "
    "threw the ball and the dog ran after it. They played all day until the sun went down.";
const std::string kOtherStory =
    "Tom had a small boat. He took it to the pond every morning and watched it float. One day "
    "the wind pushed the boat far away, and a kind duck brought it back to him.";

// One `reprise serve` process, terminated at the end.
class ServeProcess {
 public:
  ServeProcess(const std::string& dir, const std::string& name, const std::string& remote,
               const std::string& api_key) {
    port_ = testing_support::FreeLoopbackPort();
    log_ = dir + "/" + name + ".log";
    std::vector<std::string> args = {REPRISE_CLI_PATH, "serve", "-m", kModel,
                                     "--port", std::to_string(port_),
                                     "--store-dir", dir + "/" + name,
                                     "--threads", "1",
                                     "--api-key", api_key};
    if (!remote.empty()) args.insert(args.end(), {"--remote", remote});
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~ServeProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // True once /health answers 200 (at most 60 s: the model loads and compiles).
  bool WaitUntilReady() {
    for (int i = 0; i < 600; ++i) {
      if (std::optional<LoopbackClient> client = LoopbackClient::Connect(port_)) {
        client->Send(testing_support::GetRequest("/health"));
        const std::optional<RawResponse> r = client->ReadResponse(std::chrono::seconds(5));
        if (r && r->status == 200) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // POSTs a chat completion on `document` and the question; the status and the body.
  std::pair<int, json> Ask(const std::string& key, const std::string& document,
                           const std::string& question) {
    const json body = {{"model", "stories260K"},
                       {"messages", {{{"role", "user"}, {"content", question}}}},
                       {"documents", {{{"id", "story"}, {"text", document}}}},
                       {"max_tokens", 12},
                       {"temperature", 0}};
    std::optional<LoopbackClient> client = LoopbackClient::Connect(port_);
    if (!client) return {0, json()};
    client->Send(testing_support::PostRequest("/v1/chat/completions", body.dump(),
                                              "Authorization: Bearer " + key + "\r\n"));
    const std::optional<RawResponse> r = client->ReadResponse(std::chrono::seconds(120));
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

  std::string log() const {
    std::string out;
    if (FILE* f = fopen(log_.c_str(), "r")) {
      char buffer[4096];
      size_t n;
      while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) out.append(buffer, n);
      fclose(f);
    }
    return out;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  std::string log_;
};

int CachedTokens(const json& body) {
  return body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}
int PromptTokens(const json& body) { return body["usage"]["prompt_tokens"].get<int>(); }
std::string Content(const json& body) {
  return body["choices"][0]["message"]["content"].get<std::string>();
}

// Waits until server A's write-back has sent the namespace's chunks (the number of its keys
// has stopped growing), at most 30 s.
void WaitForRemoteChunks(const RedisTestServer& redis, const std::string& name_space) {
  size_t last = 0;
  int stable = 0;
  for (int i = 0; i < 300 && stable < 5; ++i) {
    const std::string keys = redis.Run({"KEYS", "reprise:{" + name_space + "}:kv:*"});
    const size_t count = static_cast<size_t>(std::count(keys.begin(), keys.end(), '\n'));
    stable = count > 0 && count == last ? stable + 1 : 0;
    last = count;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GT(last, 0u) << "server A sent nothing";
}

class RemoteServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RedisServerPath().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)";
    }
    ASSERT_TRUE(redis_.Start());
  }
  testing_support::TempDir dir_;
  RedisTestServer redis_;
};

TEST_F(RemoteServeTest, ServerBReusesServerAsDocumentAndAnswersWithoutRedis) {
  ServeProcess a(dir_.path(), "a", redis_.url(), "key-a:team");
  ServeProcess b(dir_.path(), "b", redis_.url(), "key-b:team");
  ServeProcess reference(dir_.path(), "reference", "", "key-r:team");  // no remote tier
  ASSERT_TRUE(a.WaitUntilReady()) << a.log();
  ASSERT_TRUE(b.WaitUntilReady()) << b.log();
  ASSERT_TRUE(reference.WaitUntilReady()) << reference.log();

  const auto [a_status, a_body] = a.Ask("key-a", kStory, "Where did Lily play?");
  ASSERT_EQ(a_status, 200) << a_body.dump();
  WaitForRemoteChunks(redis_, "team");

  const std::string question = "What did the dog want?";
  const auto [b_status, b_body] = b.Ask("key-b", kStory, question);
  ASSERT_EQ(b_status, 200) << b_body.dump() << b.log();
  EXPECT_GE(CachedTokens(b_body), PromptTokens(b_body) / 2) << b_body.dump();
  // The exact prefix is bit for bit a full prefill's KV: the same answer as a server that
  // computed everything.
  const auto [r_status, r_body] = reference.Ask("key-r", kStory, question);
  ASSERT_EQ(r_status, 200);
  EXPECT_EQ(CachedTokens(r_body), 0);
  EXPECT_EQ(Content(b_body), Content(r_body));

  // Redis stopped: B answers from what it has, and computes the rest.
  redis_.Stop();
  const auto [down_status, down_body] = b.Ask("key-b", kOtherStory, "Who had a boat?");
  EXPECT_EQ(down_status, 200) << down_body.dump() << b.log();
  const auto [again_status, again_body] = b.Ask("key-b", kStory, "Who threw the ball?");
  EXPECT_EQ(again_status, 200);
  EXPECT_GE(CachedTokens(again_body), PromptTokens(again_body) / 2);  // its own tiers
}

TEST_F(RemoteServeTest, TwoApiKeysNamespacesNeverShare) {
  ServeProcess a(dir_.path(), "a", redis_.url(), "key-a:tenant-a");
  ServeProcess b(dir_.path(), "b", redis_.url(), "key-b:tenant-b");
  ASSERT_TRUE(a.WaitUntilReady()) << a.log();
  ASSERT_TRUE(b.WaitUntilReady()) << b.log();
  const auto [a_status, a_body] = a.Ask("key-a", kStory, "Where did Lily play?");
  ASSERT_EQ(a_status, 200);
  WaitForRemoteChunks(redis_, "tenant-a");
  const auto [b_status, b_body] = b.Ask("key-b", kStory, "What did the dog want?");
  ASSERT_EQ(b_status, 200);
  EXPECT_EQ(CachedTokens(b_body), 0) << b_body.dump();
  EXPECT_EQ(redis_.Run({"KEYS", "reprise:{tenant-b}:*"}).find("tenant-a"), std::string::npos);
}

}  // namespace
}  // namespace reprise
