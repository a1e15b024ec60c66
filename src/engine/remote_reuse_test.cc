// The store's remote tier through the public API, as two servers would use it: two engines
// with store folders of their own and one redis-server (started by the test on loopback).
// Engine B reuses the document prefix engine A computed, bit for bit what a full prefill gives; with
// the server stopped, B still answers (from its local tiers, or by computing); one namespace
// never reads another's chunks. Skips without redis-server.
#include <gtest/gtest.h>

#include <string>

#include "reprise/engine.h"
#include "store/redis_test_server.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using store::test_util::RedisServerPath;
using store::test_util::RedisTestServer;

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

const std::string kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play with her red ball "
    "in the park. One day, she saw a big dog near the tree. The dog wanted to play too. Lily "
    "threw the ball and the dog ran after it. They played all day until the sun went down.";
// Server A answers one question on the document, server B another.
const std::string kQuestionA = "Where did Lily play?";
const std::string kQuestionB = "What did the dog want?";

EngineOptions Options(const std::string& store_dir, const std::string& remote) {
  EngineOptions o;
  o.model_path = kModel;
  o.context_tokens = 1024;
  o.num_threads = 2;
  o.reuse = ReuseMethod::kPrefix;
  o.cache_mb = 64;
  o.store_dir = store_dir;
  o.store_remote = remote;
  return o;
}

GenerateRequest Request(const std::string& question, const std::string& name_space = "") {
  GenerateRequest r;
  r.documents = {Document{"story", kStory}};
  r.prompt = question;
  r.max_new_tokens = 12;
  r.return_first_token_logits = true;
  r.name_space = name_space;
  return r;
}

class RemoteReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RedisServerPath().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)";
    }
    ASSERT_TRUE(server_.Start());
  }

  // What a full prefill gives: an engine without a remote tier, on a fresh store.
  GenerateResult Fresh(const GenerateRequest& request) {
    auto engine = Engine::Create(Options(dir_.path() + "/fresh-" + std::to_string(++fresh_), ""));
    EXPECT_TRUE(engine.ok()) << engine.error().ToString();
    Result<GenerateResult> result = (*engine)->Generate(request);
    EXPECT_TRUE(result.ok());
    return std::move(result).value();
  }

  // Engine A answers kQuestionA on the document and writes its chunks back (to its flash and
  // the remote tier).
  void ComputeOnA(const std::string& name_space = "") {
    auto a = Engine::Create(Options(dir_.path() + "/a", server_.url()));
    ASSERT_TRUE(a.ok()) << a.error().ToString();
    ASSERT_TRUE((*a)->Generate(Request(kQuestionA, name_space)).ok());
    ASSERT_TRUE((*a)->Flush().ok());
    EXPECT_GT((*a)->Stats().remote_chunks_sent, 0);
  }

  testing_support::TempDir dir_;
  RedisTestServer server_;
  int fresh_ = 0;
};

TEST_F(RemoteReuseTest, AnotherEngineReusesThePrefixExactly) {
  ComputeOnA();
  auto b = Engine::Create(Options(dir_.path() + "/b", server_.url()));
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Result<GenerateResult> reused = (*b)->Generate(Request(kQuestionB));
  ASSERT_TRUE(reused.ok()) << reused.error().ToString();
  EXPECT_GE(reused->reuse.tokens_prefix, static_cast<int>(reused->prompt_tokens.size()) / 2);
  EXPECT_GT((*b)->Stats().remote_hits, 0);
  EXPECT_EQ((*b)->Stats().remote_bad_values, 0);
  const GenerateResult fresh = Fresh(Request(kQuestionB));
  EXPECT_EQ(reused->generated_tokens, fresh.generated_tokens);
  EXPECT_EQ(reused->first_token_logits, fresh.first_token_logits);
  // The fetched chunks landed on B's own flash: a restarted B without the server finds them.
  ASSERT_TRUE((*b)->Flush().ok());
  b->reset();
  server_.Stop();
  auto b_again = Engine::Create(Options(dir_.path() + "/b", server_.url()));
  ASSERT_TRUE(b_again.ok());
  Result<GenerateResult> local = (*b_again)->Generate(Request(kQuestionB));
  ASSERT_TRUE(local.ok());
  EXPECT_GE(local->reuse.tokens_prefix, static_cast<int>(local->prompt_tokens.size()) / 2);
  EXPECT_EQ(local->generated_tokens, fresh.generated_tokens);
}

TEST_F(RemoteReuseTest, WithTheServerStoppedRequestsStillAnswer) {
  ComputeOnA();
  server_.Stop();
  auto b = Engine::Create(Options(dir_.path() + "/b", server_.url()));
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Result<GenerateResult> result = (*b)->Generate(Request(kQuestionB));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->reuse.tokens_prefix, 0);
  EXPECT_EQ(result->generated_tokens, Fresh(Request(kQuestionB)).generated_tokens);
  EXPECT_EQ((*b)->Stats().remote_hits, 0);
  ASSERT_TRUE((*b)->Flush().ok());  // write-back gives up on the server, keeps the chunks
  EXPECT_GT((*b)->Stats().chunks, 0);
}

TEST_F(RemoteReuseTest, ANamespaceNeverReadsAnothersChunks) {
  ComputeOnA("tenant-a");
  auto b = Engine::Create(Options(dir_.path() + "/b", server_.url()));
  ASSERT_TRUE(b.ok());
  Result<GenerateResult> other = (*b)->Generate(Request(kQuestionB, "tenant-b"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->reuse.tokens_prefix, 0);
  EXPECT_EQ((*b)->Stats().remote_hits, 0);
  Result<GenerateResult> same = (*b)->Generate(Request(kQuestionB, "tenant-a"));
  ASSERT_TRUE(same.ok());
  EXPECT_GE(same->reuse.tokens_prefix, static_cast<int>(same->prompt_tokens.size()) / 2);
}

TEST_F(RemoteReuseTest, ARemoteTierNeedsAStoreAndAValidUrl) {
  EngineOptions no_store = Options("", server_.url());
  EXPECT_EQ(Engine::Create(no_store).status().code(), StatusCode::kInvalidArgument);
  EngineOptions bad_url = Options(dir_.path() + "/x", "http://127.0.0.1:1");
  EXPECT_EQ(Engine::Create(bad_url).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise
