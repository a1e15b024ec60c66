// The public store administration (reprise/store_admin.h), driven as an app would: an engine
// fills a store, an admin beside it (no model loaded) lists, pins, trims and clears it, and the
// engine opened again sees what the admin did.
#include "reprise/store_admin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "reprise/engine.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

std::string Document(int seed) {
  static const char* kWords[] = {"Lily", "played", "with", "her", "ball", "in",  "the",
                                 "park", "Tom",    "saw",  "a",   "big",  "tree"};
  std::string out;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 5;
  for (int i = 0; i < 150; ++i) {
    x = x * 1664525u + 1013904223u;
    out += (i ? " " : "") + std::string(kWords[(x >> 8) % 13]);
    if (i % 10 == 9) out += ".";
  }
  return out + ".\n";
}

// Runs one request with four documents in `name_space` on an engine over `dir`, and closes it
// (the store persists everything at close).
GenerateResult Fill(const std::string& dir, const std::string& name_space, int seed) {
  EngineOptions o;
  o.model_path = kModel;
  o.context_tokens = 1024;
  o.num_threads = 2;
  o.reuse = ReuseMethod::kBlend;
  o.store_dir = dir;
  o.name_space = name_space;
  auto engine = Engine::Create(o);
  EXPECT_TRUE(engine.ok()) << engine.error().ToString();
  GenerateRequest r;
  for (int d = 0; d < 4; ++d) r.segments.push_back({"document", Document(seed + d)});
  r.segments.push_back({"question", "Once upon a time"});
  r.max_new_tokens = 2;
  auto result = (*engine)->Generate(r);
  EXPECT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_TRUE((*engine)->Flush().ok());
  return result.ok() ? *result : GenerateResult{};
}

TEST(StoreAdminTest, ListsPinsTrimsAndClearsWhatAnEngineStored) {
  testing_support::TempDir tmp;
  const std::string dir = tmp.path() + "/store";
  // Nothing there yet: a read-only admin says so and creates nothing.
  auto missing = StoreAdmin::Open({dir, 8192, /*read_only=*/true});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir));

  Fill(dir, "alice", 1);
  Fill(dir, "bob", 10);

  auto reader = StoreAdmin::Open({dir, 8192, /*read_only=*/true});
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  auto all = (*reader)->List();
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  auto alice = (*reader)->List(std::string("alice"));
  ASSERT_TRUE(alice.ok());
  ASSERT_GT(alice->size(), 1u);
  EXPECT_LT(alice->size(), all->size());
  int64_t alice_bytes = 0;
  for (const StoredChunk& c : *alice) {
    EXPECT_EQ(c.name_space, "alice");
    EXPECT_GT(c.tokens, 0);
    EXPECT_GT(c.bytes, 0);
    EXPECT_FALSE(c.made.empty());
    EXPECT_FALSE(c.pinned);
    EXPECT_EQ(c.codec, KvCodec::kF16);
    alice_bytes += c.bytes;
  }
  auto status = (*reader)->Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->chunks, static_cast<int64_t>(all->size()));
  EXPECT_EQ(status->namespaces, 2);
  EXPECT_TRUE(status->catalog_error.empty());
  auto alice_status = (*reader)->Status(std::string("alice"));
  ASSERT_TRUE(alice_status.ok());
  EXPECT_EQ(alice_status->chunks, static_cast<int64_t>(alice->size()));
  EXPECT_EQ(alice_status->bytes_on_disk, alice_bytes);
  // A read-only admin changes nothing.
  EXPECT_EQ((*reader)->Clear(std::nullopt).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*reader)->SetPinned("alice", std::nullopt, true).code(), StatusCode::kInvalidArgument);
  reader->reset();

  // Pin one of alice's chunks; a budget of 1 MiB the store exceeds evicts everything else.
  {
    auto admin = StoreAdmin::Open({dir, 8192, false});
    ASSERT_TRUE(admin.ok()) << admin.error().ToString();
    const uint64_t kept = alice->front().chunk_id;
    ASSERT_TRUE((*admin)->SetPinned("alice", kept, true).ok());
    EXPECT_EQ((*admin)->SetPinned("alice", 12345, true).code(), StatusCode::kNotFound);
    auto pinned = (*admin)->List(std::string("alice"));
    ASSERT_TRUE(pinned.ok());
    for (const StoredChunk& c : *pinned) EXPECT_EQ(c.pinned, c.chunk_id == kept);
  }
  const int64_t total = [&] {
    auto admin = StoreAdmin::Open({dir, 8192, true});
    return (*admin)->Status()->bytes_on_disk;
  }();
  ASSERT_GT(total, 1 << 20) << "the test needs a store over the 1 MiB budget below";
  {
    auto admin = StoreAdmin::Open({dir, 1, false});
    ASSERT_TRUE(admin.ok());
    EXPECT_EQ((*admin)->disk_budget_bytes(), 1 << 20);
    int64_t calls = 0;
    auto gc = (*admin)->Gc([&](int64_t done, int64_t total_files) {
      EXPECT_LE(done, total_files);
      ++calls;
    });
    ASSERT_TRUE(gc.ok()) << gc.error().ToString();
    EXPECT_GT(calls, 0);
    EXPECT_EQ(gc->corrupt, 0);
    EXPECT_GT(gc->evicted, 0);
    EXPECT_EQ(gc->evicted_bytes, gc->catalog_bytes_dropped);
    auto after = (*admin)->Status();
    ASSERT_TRUE(after.ok());
    EXPECT_LE(after->bytes_on_disk, 1 << 20);
    EXPECT_EQ(after->bytes_on_disk + gc->evicted_bytes, total);
    auto left = (*admin)->List();
    ASSERT_TRUE(left.ok());
    bool pinned_kept = false;
    for (const StoredChunk& c : *left) pinned_kept |= c.pinned;
    EXPECT_TRUE(pinned_kept);

    // Clearing bob's namespace leaves alice's.
    ASSERT_TRUE((*admin)->Clear(std::string("bob")).ok());
    EXPECT_EQ((*admin)->List(std::string("bob"))->size(), 0u);
    EXPECT_GT((*admin)->List(std::string("alice"))->size(), 0u);
  }

  // An engine opened on the store again reuses alice's pinned chunk.
  const GenerateResult again = Fill(dir, "alice", 1);
  EXPECT_GT(again.reuse.tokens_prefix + again.reuse.tokens_reused, 0);

  // Clearing everything empties it.
  auto admin = StoreAdmin::Open({dir, 8192, false});
  ASSERT_TRUE(admin.ok());
  ASSERT_TRUE((*admin)->Clear(std::nullopt).ok());
  EXPECT_EQ((*admin)->Status()->chunks, 0);
}

TEST(StoreAdminTest, RejectsBadOptions) {
  testing_support::TempDir tmp;
  EXPECT_EQ(StoreAdmin::Open({"", 8192, false}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StoreAdmin::Open({tmp.path() + "/s", 0, false}).error().code(),
            StatusCode::kInvalidArgument);
  // A file where the folder should be.
  std::ofstream(tmp.path() + "/file") << "x";
  EXPECT_FALSE(StoreAdmin::Open({tmp.path() + "/file", 8192, false}).ok());
}

}  // namespace
}  // namespace reprise
