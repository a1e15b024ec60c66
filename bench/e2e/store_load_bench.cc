// Loading a 1024-token chunk set from flash into the memory pool, against `dd` reading the
// same files (the storage's sequential read speed), measured in one run. A plain program:
//   store_load_bench [--layers 28 --kv-heads 8 --head-dim 128 --chunks 2 --tokens 512
//                     --repetitions 5 --codec f16|int8]
// Defaults are Qwen3-0.6B's KV shape. It tries to drop the page cache between runs (root
// only); when it cannot, both sides read from the page cache and it says so.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/float16.h"
#include "base/random.h"
#include "store/chunk_store.h"

namespace {

using reprise::store::ChunkStore;

bool DropPageCache() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  if (!f) return false;
  f << "3\n";
  return static_cast<bool>(f);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == name) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace reprise;
  const int layers = Flag(argc, argv, "--layers", 28), heads = Flag(argc, argv, "--kv-heads", 8);
  const int head_dim = Flag(argc, argv, "--head-dim", 128);
  const int chunks = Flag(argc, argv, "--chunks", 2), tokens = Flag(argc, argv, "--tokens", 512);
  const int repetitions = Flag(argc, argv, "--repetitions", 5);
  bool int8 = false;
  for (int i = 1; i < argc; ++i) int8 |= std::string(argv[i]) == "int8";
  const std::string dir = std::filesystem::temp_directory_path() / "reprise_store_load_bench";
  std::filesystem::remove_all(dir);
  store::StoreOptions options;
  options.dir = dir;
  options.model_fingerprint = 42;
  options.pool_bytes = int64_t{4} << 30;
  options.codec = int8 ? KvCodec::kInt8 : KvCodec::kF16;
  std::vector<kv::ChunkId> ids;
  {
    auto s = ChunkStore::Open(options);
    if (!s.ok()) return std::fprintf(stderr, "%s\n", s.error().ToString().c_str()), 1;
    auto ns = (*s)->OpenNamespace("bench");
    Random random(1);
    for (int c = 0; c < chunks; ++c) {
      auto e = std::make_shared<kv::ChunkEntry>();
      for (int t = 0; t < tokens; ++t) e->tokens.push_back(static_cast<int32_t>(random.NextBelow(100000)));
      e->content = kv::HashTokens(42, e->tokens);
      e->id = kv::ChainId(c == 0 ? 0 : ids.back(), e->content);
      e->parent = c == 0 ? 0 : ids.back();
      e->exact = true;
      auto k = std::make_shared<kv::ChunkKv>();
      k->num_layers = layers;
      k->num_kv_heads = heads;
      k->head_dim = head_dim;
      k->num_tokens = tokens;
      k->Allocate();
      for (auto& x : k->k) x = F32ToF16(static_cast<float>(random.NextGaussian()));
      for (auto& x : k->v) x = F32ToF16(static_cast<float>(random.NextGaussian()));
      for (int t = 0; t < tokens; ++t) k->positions[static_cast<size_t>(t)] = c * tokens + t;
      e->kv = k;
      ids.push_back(e->id);
      if (!ns->Insert(e).ok()) return 1;
    }
    (*s)->Flush().IgnoreError();
  }
  std::vector<std::string> files;
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".rpkv") {
      files.push_back(e.path());
      bytes += std::filesystem::file_size(e.path());
    }
  }
  const bool cold = DropPageCache();
  std::printf("%d chunks x %d tokens (%d layers, %d kv heads, head dim %d, %s): %.1f MiB in %zu "
              "files; page cache %s between runs\n",
              chunks, tokens, layers, heads, head_dim, int8 ? "int8" : "f16", bytes / 1048576.0,
              files.size(), cold ? "dropped" : "NOT dropped (not permitted): warm reads");
  double best_store = 1e9, best_dd = 1e9;
  for (int r = 0; r < repetitions; ++r) {
    DropPageCache();
    {
      auto s = ChunkStore::Open(options);
      auto ns = (*s)->OpenNamespace("bench");
      const auto start = std::chrono::steady_clock::now();
      for (kv::ChunkId id : ids) {
        if (!ns->Find(id)) return std::fprintf(stderr, "chunk not found\n"), 1;
      }
      best_store = std::min(best_store, Seconds(start));
    }
    DropPageCache();
    std::string command = "dd bs=1M status=none of=/dev/null";
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& f : files) {
      if (std::system((command + " if=" + f).c_str()) != 0) return 1;
    }
    best_dd = std::min(best_dd, Seconds(start));
  }
  std::printf("store load (read, checksum, decode into the pool): %.1f ms = %.0f MiB/s\n",
              best_store * 1e3, bytes / 1048576.0 / best_store);
  std::printf("dd of the same files:                              %.1f ms = %.0f MiB/s\n",
              best_dd * 1e3, bytes / 1048576.0 / best_dd);
  std::printf("ratio store / dd throughput: %.2f\n", best_dd / best_store);
  std::filesystem::remove_all(dir);
  return 0;
}
