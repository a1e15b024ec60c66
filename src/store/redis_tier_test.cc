#include "store/redis_tier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/redis_test_server.h"

namespace reprise::store {
namespace {

using test_util::RedisServerPath;
using test_util::RedisTestServer;

#define REQUIRE_REDIS_SERVER()                                                         \
  if (RedisServerPath().empty()) {                                                     \
    GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)"; \
  }

TEST(RedisUrlTest, ParsesEveryPart) {
  Result<RedisUrl> url = ParseRedisUrl("redis://alice:s%40cret@cache.local:6380/3");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->user, "alice");
  EXPECT_EQ(url->password, "s@cret");
  EXPECT_EQ(url->host, "cache.local");
  EXPECT_EQ(url->port, 6380);
  EXPECT_EQ(url->db, 3);

  url = ParseRedisUrl("redis://127.0.0.1");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->port, 6379);
  EXPECT_EQ(url->db, 0);
  EXPECT_TRUE(url->user.empty());
  EXPECT_TRUE(url->password.empty());

  url = ParseRedisUrl("redis://:pw@[::1]:7000");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 7000);
  EXPECT_EQ(url->password, "pw");
}

TEST(RedisUrlTest, RejectsBadUrlsWithoutEchoingThePassword) {
  for (const char* bad : {"http://h:1", "redis://", "redis://h:0", "redis://h:70000",
                          "redis://h:x", "redis://h:1/-1", "redis://[::1", "redis://h:1/db"}) {
    const Result<RedisUrl> url = ParseRedisUrl(bad);
    EXPECT_FALSE(url.ok()) << bad;
    if (!url.ok()) {
      EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument);
    }
  }
  const Result<RedisUrl> url = ParseRedisUrl("redis://u:topsecret@h:99999");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.status().ToString().find("topsecret"), std::string::npos);
}

TEST(RemoteKeysTest, CarryTheNamespaceInAHashTagUnambiguously) {
  EXPECT_EQ(RemoteChunkKey("team-a", 0xabc, 0x12),
            "reprise:{team-a}:kv:0000000000000abc:0000000000000012");
  EXPECT_EQ(RemoteContentKey("team-a", 1, 2),
            "reprise:{team-a}:content:0000000000000001:0000000000000002");
  EXPECT_EQ(RemoteNamespacePattern("team-a"), "reprise:{team-a}:*");
  // Braces, colons and percent signs are escaped: a namespace cannot end the tag early or
  // imitate another namespace's key.
  EXPECT_EQ(RemoteNamespacePattern("a}b:c%{"), "reprise:{a%7Db%3Ac%25%7B}:*");
  EXPECT_NE(RemoteChunkKey("a}:kv:x", 1, 2), RemoteChunkKey("a", 1, 2));
  EXPECT_EQ(DecodeRemoteChunkId(EncodeRemoteChunkId(0xfedcba9876543210)), 0xfedcba9876543210);
  EXPECT_FALSE(DecodeRemoteChunkId("12"));
  EXPECT_FALSE(DecodeRemoteChunkId("zzzzzzzzzzzzzzzz"));
}

TEST(RemoteOptionsTest, RejectsBadNumbers) {
  RemoteOptions options;
  options.url = "redis://127.0.0.1:1";
  options.timeout_ms = 0;
  EXPECT_FALSE(RedisTier::Create(options).ok());
  options.timeout_ms = 50;
  options.ttl_seconds = -1;
  EXPECT_FALSE(RedisTier::Create(options).ok());
  options.ttl_seconds = 0;
  EXPECT_TRUE(RedisTier::Create(options).ok());  // nothing is connected yet
}

RemoteOptions OptionsFor(const RedisTestServer& server) {
  RemoteOptions options;
  options.url = server.url();
  options.timeout_ms = 50;
  options.backoff_initial_ms = 20;
  options.backoff_max_ms = 200;
  return options;
}

TEST(RedisTierTest, WritesAndReadsBinaryValuesWithTheirTtl) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server;
  ASSERT_TRUE(server.Start());
  RemoteOptions options = OptionsFor(server);
  options.ttl_seconds = 3600;
  auto tier = std::move(RedisTier::Create(options)).value();
  const std::string value("a\0b\xff" "c", 5);
  const RemotePut puts[] = {{"reprise:{ns}:x", value, false}, {"reprise:{ns}:y", "1", false}};
  ASSERT_TRUE(tier->Put(puts).ok());
  Result<std::optional<std::string>> got = tier->Get("reprise:{ns}:x");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, value);
  got = tier->Get("reprise:{ns}:absent");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  const int ttl = std::stoi(server.Run({"TTL", "reprise:{ns}:x"}));
  EXPECT_GT(ttl, 3500);
  EXPECT_LE(ttl, 3600);
  // NX: a value is never replaced by one written only-if-absent.
  const RemotePut nx[] = {{"reprise:{ns}:x", "other", true}};
  ASSERT_TRUE(tier->Put(nx).ok());
  EXPECT_EQ(server.Run({"GET", "reprise:{ns}:x"}), value);
  const RemoteTierStats stats = tier->Stats();
  EXPECT_EQ(stats.gets, 2);
  EXPECT_EQ(stats.found, 1);
  EXPECT_EQ(stats.absent, 1);
  EXPECT_EQ(stats.bytes_read, 5);
  EXPECT_GE(stats.connects, 1);
  EXPECT_TRUE(stats.connected);
}

TEST(RedisTierTest, PasswordFromOptionsAndUrl) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server({"--requirepass", "hunter2"});
  ASSERT_TRUE(server.Start());
  RemoteOptions options = OptionsFor(server);
  auto without = std::move(RedisTier::Create(options)).value();
  EXPECT_EQ(without->Get("k").status().code(), StatusCode::kUnavailable);
  options.password = "hunter2";
  auto with = std::move(RedisTier::Create(options)).value();
  EXPECT_TRUE(with->Get("k").ok());
  options.password.clear();
  options.url = "redis://:hunter2@127.0.0.1:" + std::to_string(server.port()) + "/2";
  auto in_url = std::move(RedisTier::Create(options)).value();
  const RemotePut put[] = {{"k", "v", false}};
  EXPECT_TRUE(in_url->Put(put).ok());
}

TEST(RedisTierTest, DownAtStartMissesAtOnceThenConnectsWhenItComes) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server;
  ASSERT_TRUE(server.Start());
  RemoteOptions options = OptionsFor(server);
  server.Stop();
  auto tier = std::move(RedisTier::Create(options)).value();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(tier->Get("k").status().code(), StatusCode::kUnavailable);
  }
  EXPECT_EQ(tier->Stats().connects, 0);
  EXPECT_EQ(tier->Stats().unavailable, 20);
  ASSERT_TRUE(server.Restart());
  // Reconnects once the backoff (at most 200 ms here) has passed.
  bool answered = false;
  for (int i = 0; i < 200 && !answered; ++i) {
    answered = tier->Get("k").ok();
    if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(answered);
  EXPECT_EQ(tier->Stats().connects, 1);
}

TEST(RedisTierTest, APausedServerCostsAboutTheTimeoutNotAStall) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server;
  ASSERT_TRUE(server.Start());
  auto tier = std::move(RedisTier::Create(OptionsFor(server))).value();
  ASSERT_TRUE(tier->Get("k").ok());
  server.Pause();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(tier->Get("k").status().code(), StatusCode::kUnavailable);
    const RemotePut put[] = {{"k", "v", false}};
    EXPECT_FALSE(tier->Put(put).ok());
  }
  // Twenty operations against a stopped process: a timeout of 50 ms (plus backoff refusals
  // that cost nothing) each at most; a generous bound shows no stall (a blocking client
  // would never return).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  server.Resume();
  bool answered = false;
  for (int i = 0; i < 300 && !answered; ++i) {
    answered = tier->Get("k").ok();
    if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(answered);
}

TEST(RedisTierTest, AFullServerRefusesWritesWithoutBreakingReads) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  ASSERT_TRUE(server.Start());
  auto tier = std::move(RedisTier::Create(OptionsFor(server))).value();
  const std::string big(256 * 1024, 'x');
  Status last;
  for (int i = 0; i < 40; ++i) {
    const RemotePut put[] = {{"k" + std::to_string(i), big, false}};
    last = tier->Put(put);
  }
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted);
  EXPECT_GT(tier->Stats().put_refused, 0);
  // Reads go on.
  Result<std::optional<std::string>> got = tier->Get("k0");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->has_value());
  EXPECT_TRUE(tier->Stats().connected);
}

TEST(RedisTierTest, AnAclUserReachesItsNamespaceOnly) {
  REQUIRE_REDIS_SERVER();
  RedisTestServer server;
  ASSERT_TRUE(server.Start());
  // The per-tenant setup docs/serving.md describes.
  ASSERT_EQ(server.Run({"ACL", "SETUSER", "tenant-a", "on", ">pw-a", "resetkeys",
                        "~" + RemoteNamespacePattern("tenant-a"), "+get", "+set"}),
            "OK");
  ASSERT_EQ(server.Run({"SET", RemoteChunkKey("tenant-b", 1, 2), "b's"}), "OK");
  RemoteOptions options = OptionsFor(server);
  options.url = "redis://tenant-a:pw-a@127.0.0.1:" + std::to_string(server.port());
  auto tier = std::move(RedisTier::Create(options)).value();
  const std::string own = RemoteChunkKey("tenant-a", 1, 2);
  const RemotePut put[] = {{own, "a's", false}};
  ASSERT_TRUE(tier->Put(put).ok());
  Result<std::optional<std::string>> got = tier->Get(own);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value_or(""), "a's");
  EXPECT_EQ(tier->Get(RemoteChunkKey("tenant-b", 1, 2)).status().code(),
            StatusCode::kUnavailable);
  const RemotePut other[] = {{RemoteChunkKey("tenant-b", 1, 2), "overwritten", false}};
  EXPECT_FALSE(tier->Put(other).ok());
  EXPECT_EQ(server.Run({"GET", RemoteChunkKey("tenant-b", 1, 2)}), "b's");
}

}  // namespace
}  // namespace reprise::store
