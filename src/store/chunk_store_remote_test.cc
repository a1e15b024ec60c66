// The store's remote tier against a real redis-server (redis_test_server.h): two stores with
// folders of their own share chunks through it; a value that fails its checks is a miss,
// counted, never used; a server that is down, paused, restarted or full makes lookups miss,
// never fail or stall; one namespace never reads another's entries.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/chunk_store.h"
#include "store/kv_file.h"
#include "store/redis_test_server.h"
#include "store/remote_tier.h"
#include "store/store_test_util.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

using test_util::MakeTestChunk;
using test_util::RedisServerPath;
using test_util::RedisTestServer;
using test_util::SameChunk;
using test_util::TestShape;

constexpr uint64_t kFingerprint = 0x5eed;

#define REQUIRE_REDIS_SERVER()                                                             \
  if (RedisServerPath().empty()) {                                                         \
    GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)"; \
  }

std::shared_ptr<const kv::ChunkEntry> Chunk(uint64_t seed, kv::ChunkId parent = 0) {
  TestShape shape;
  shape.num_tokens = 8;
  kv::ChunkEntry entry = MakeTestChunk(seed, shape, kFingerprint, parent, "text");
  entry.exact = true;
  entry.provenance.origin = kv::KvOrigin::kComputed;
  return std::make_shared<const kv::ChunkEntry>(std::move(entry));
}

StoreOptions Options(const std::string& dir, const std::string& url) {
  StoreOptions o;
  o.dir = dir;
  o.model_fingerprint = kFingerprint;
  o.remote.url = url;
  o.remote.timeout_ms = 50;
  o.remote.backoff_initial_ms = 20;
  o.remote.backoff_max_ms = 200;
  const TestShape shape;
  o.kv_num_layers = shape.num_layers;
  o.kv_num_kv_heads = shape.num_kv_heads;
  o.kv_head_dim = shape.head_dim;
  return o;
}

class ChunkStoreRemoteTest : public testing::Test {
 protected:
  void SetUp() override {
    if (RedisServerPath().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)";
    }
    ASSERT_TRUE(server_.Start());
  }
  std::unique_ptr<ChunkStore> Open(const std::string& name) {
    return std::move(ChunkStore::Open(Options(dir_.path() + "/" + name, server_.url()))).value();
  }

  testing_support::TempDir dir_;
  RedisTestServer server_;
};

TEST_F(ChunkStoreRemoteTest, AnotherStoreFindsWhatOneWroteBack) {
  auto a = Open("a");
  auto root = Chunk(2), child = Chunk(4, root->id);
  auto ns_a = a->OpenNamespace("app");
  ASSERT_TRUE(ns_a->Insert(root).ok());
  ASSERT_TRUE(ns_a->Insert(child).ok());
  ASSERT_TRUE(a->Flush().ok());
  EXPECT_EQ(a->Stats().remote_chunks_sent, 2);
  EXPECT_EQ(server_.Run({"EXISTS", RemoteChunkKey("app", kFingerprint, child->id)}), "1");

  auto b = Open("b");
  auto ns_b = b->OpenNamespace("app");
  // The prefix chain by id (planning's Peek fetches and keeps it), and a chunk by content.
  std::shared_ptr<const kv::ChunkEntry> peeked = ns_b->Peek(root->id);
  ASSERT_NE(peeked, nullptr);
  EXPECT_TRUE(SameChunk(*peeked, *root));
  std::shared_ptr<const kv::ChunkEntry> found = ns_b->Find(root->id);
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(SameChunk(*found, *root));
  std::shared_ptr<const kv::ChunkEntry> by_content = ns_b->FindByContent(child->content);
  ASSERT_NE(by_content, nullptr);
  EXPECT_TRUE(SameChunk(*by_content, *child));
  StoreStats stats = b->Stats();
  EXPECT_EQ(stats.remote_hits, 2);
  EXPECT_EQ(stats.remote_bad_values, 0);
  EXPECT_GT(stats.remote_bytes_read, 0);
  // They land on B's flash too, and are not sent back.
  ASSERT_TRUE(b->Flush().ok());
  stats = b->Stats();
  EXPECT_EQ(stats.chunks, 2);
  EXPECT_EQ(stats.remote_chunks_sent, 0);
  // A miss everywhere is a miss.
  EXPECT_EQ(ns_b->Find(Chunk(8)->id), nullptr);
  EXPECT_EQ(b->Stats().remote_misses, 1);
}

TEST_F(ChunkStoreRemoteTest, BadValuesAreMissesCountedNeverUsed) {
  auto a = Open("a");
  auto chunk = Chunk(2), other = Chunk(4);
  auto ns_a = a->OpenNamespace("app");
  ASSERT_TRUE(ns_a->Insert(chunk).ok());
  ASSERT_TRUE(ns_a->Insert(other).ok());
  ASSERT_TRUE(a->Flush().ok());
  const std::string key = RemoteChunkKey("app", kFingerprint, chunk->id);
  const std::string good = server_.Run({"GET", key});
  ASSERT_FALSE(good.empty());

  auto b = Open("b");
  auto ns_b = b->OpenNamespace("app");
  int64_t expected_bad = 0;
  // Garbage; a flipped payload byte (checksum); another chunk's valid file under this key;
  // the same chunk of another namespace; a truncated value.
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;
  auto other_ns = std::move(SerializeKvFile(*chunk, KvCodec::kF16, kFingerprint, "intruder"))
                      .value();
  for (const std::string& bad :
       {std::string("garbage"), flipped, server_.Run({"GET", RemoteChunkKey("app", kFingerprint,
                                                                             other->id)}),
        std::string(other_ns.begin(), other_ns.end()), good.substr(0, good.size() / 2)}) {
    ASSERT_EQ(server_.Run({"SET", key, bad}), "OK");
    EXPECT_EQ(ns_b->Peek(chunk->id), nullptr);
    EXPECT_EQ(ns_b->Find(chunk->id), nullptr);
    expected_bad += 2;
    EXPECT_EQ(b->Stats().remote_bad_values, expected_bad);
  }
  // A content key naming another chunk is a bad value too.
  ASSERT_EQ(server_.Run({"SET", RemoteContentKey("app", kFingerprint, chunk->content),
                         EncodeRemoteChunkId(other->id)}),
            "OK");
  EXPECT_EQ(ns_b->FindByContent(chunk->content), nullptr);
  EXPECT_EQ(b->Stats().remote_bad_values, expected_bad + 1);
  EXPECT_EQ(b->Stats().remote_hits, 0);
  // The good value again: found.
  ASSERT_EQ(server_.Run({"SET", key, good}), "OK");
  ASSERT_NE(ns_b->Find(chunk->id), nullptr);
  EXPECT_EQ(b->Stats().remote_hits, 1);
}

TEST_F(ChunkStoreRemoteTest, WrongShapeIsABadValue) {
  auto a = Open("a");
  ASSERT_TRUE(a->OpenNamespace("app")->Insert(Chunk(2)).ok());
  ASSERT_TRUE(a->Flush().ok());
  StoreOptions options = Options(dir_.path() + "/b", server_.url());
  options.kv_head_dim = 16;  // another model's shape under the same fingerprint
  auto b = std::move(ChunkStore::Open(options)).value();
  EXPECT_EQ(b->OpenNamespace("app")->Find(Chunk(2)->id), nullptr);
  EXPECT_EQ(b->Stats().remote_bad_values, 1);
}

TEST_F(ChunkStoreRemoteTest, NamespacesNeverReadEachOther) {
  auto a = Open("a");
  auto chunk = Chunk(2);
  ASSERT_TRUE(a->OpenNamespace("tenant-a")->Insert(chunk).ok());
  ASSERT_TRUE(a->Flush().ok());
  auto b = Open("b");
  auto tenant_b = b->OpenNamespace("tenant-b");
  EXPECT_EQ(tenant_b->Peek(chunk->id), nullptr);
  EXPECT_EQ(tenant_b->FindByContent(chunk->content), nullptr);
  // Even a copy of A's value under B's key is refused: the file names its namespace.
  ASSERT_EQ(server_.Run({"SET", RemoteChunkKey("tenant-b", kFingerprint, chunk->id),
                         server_.Run({"GET", RemoteChunkKey("tenant-a", kFingerprint, chunk->id)})}),
            "OK");
  EXPECT_EQ(tenant_b->Find(chunk->id), nullptr);
  EXPECT_EQ(b->Stats().remote_hits, 0);
  EXPECT_EQ(b->Stats().remote_bad_values, 1);
  EXPECT_NE(b->OpenNamespace("tenant-a")->Find(chunk->id), nullptr);
}

TEST_F(ChunkStoreRemoteTest, DownPausedRestartedNeverFailsALookup) {
  auto a = Open("a");
  auto ns_a = a->OpenNamespace("app");
  auto b = Open("b");
  auto ns_b = b->OpenNamespace("app");
  server_.Stop();
  // Down: inserts and write-back go on locally; lookups miss.
  ASSERT_TRUE(ns_a->Insert(Chunk(2)).ok());
  ASSERT_TRUE(a->Flush().ok());
  EXPECT_EQ(a->Stats().chunks, 1);
  EXPECT_EQ(a->Stats().remote_chunks_sent, 0);
  EXPECT_GE(a->Stats().remote_send_failures, 1);
  EXPECT_NE(ns_a->Find(Chunk(2)->id), nullptr);
  EXPECT_EQ(ns_b->Find(Chunk(2)->id), nullptr);

  // Restarted: after the backoff, writes and reads reach it again.
  ASSERT_TRUE(server_.Restart());
  auto chunk = Chunk(4);
  bool sent = false;
  for (int i = 0; i < 100 && !sent; ++i) {
    ASSERT_TRUE(ns_a->Insert(Chunk(100 + 2 * i)).ok());
    ASSERT_TRUE(a->Flush().ok());
    sent = a->Stats().remote_chunks_sent > 0;
    if (!sent) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(sent);
  ASSERT_TRUE(ns_a->Insert(chunk).ok());
  ASSERT_TRUE(a->Flush().ok());
  std::shared_ptr<const kv::ChunkEntry> found;
  for (int i = 0; i < 100 && !found; ++i) {
    found = ns_b->Find(chunk->id);
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(SameChunk(*found, *chunk));

  // Paused: lookups give up after about the timeout each, and inserts never wait for it.
  server_.Pause();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ns_b->Find(Chunk(1000 + 2 * i)->id), nullptr);
    EXPECT_EQ(ns_b->Peek(Chunk(2000 + 2 * i)->id), nullptr);
    ASSERT_TRUE(ns_a->Insert(Chunk(3000 + 2 * i)).ok());
  }
  ASSERT_TRUE(a->Flush().ok());
  // 20 lookups and 10 write-backs at 50 ms each at worst (backoff makes most immediate): a
  // generous bound shows that nothing waited for the stopped server.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  EXPECT_GT(b->Stats().remote_unavailable, 0);
  server_.Resume();
}

TEST(ChunkStoreRemoteFullTest, AFullServerEvictsOrRefusesAndNothingFails) {
  REQUIRE_REDIS_SERVER();
  for (const char* policy : {"allkeys-lru", "noeviction"}) {
    RedisTestServer server({"--maxmemory", "1mb", "--maxmemory-policy", policy});
    ASSERT_TRUE(server.Start());
    testing_support::TempDir dir;
    StoreOptions options = Options(dir.path() + "/a", server.url());
    auto a = std::move(ChunkStore::Open(options)).value();
    auto ns = a->OpenNamespace("app");
    TestShape shape;
    shape.num_tokens = 512;  // about 66 KB a chunk: 1 MB holds about a dozen
    for (int i = 0; i < 80; ++i) {
      kv::ChunkEntry entry = MakeTestChunk(2 * i, shape, kFingerprint);
      entry.exact = true;
      ASSERT_TRUE(ns->Insert(std::make_shared<const kv::ChunkEntry>(std::move(entry))).ok());
    }
    ASSERT_TRUE(a->Flush().ok()) << policy;
    const StoreStats stats = a->Stats();
    EXPECT_EQ(stats.chunks, 80) << policy;  // flash has everything
    if (std::string(policy) == "noeviction") {
      EXPECT_GT(stats.remote_send_failures, 0) << policy;
    } else {
      const std::string info = server.Run({"INFO", "stats"});
      const size_t at = info.find("evicted_keys:");
      ASSERT_NE(at, std::string::npos);
      EXPECT_GT(std::stoll(info.substr(at + 13)), 0) << policy;
    }
    // Every chunk is still found (locally).
    for (int i = 0; i < 80; ++i) {
      kv::ChunkEntry entry = MakeTestChunk(2 * i, shape, kFingerprint);
      EXPECT_NE(ns->Find(entry.id), nullptr);
    }
  }
}

}  // namespace
}  // namespace reprise::store
