// Catalog lookup latency at the sizes docs/design.md §6 plans for: 10,000 and 100,000 chunks.
//
// Each catalog holds documents of 8 chunks chained in the prefix tree; a chunk has 512 random
// token ids. Measured: Find, FindByContent, Children, SearchSpans (the span fingerprint search
// of sub-chunk candidates) and the whole lookup of one prompt (a prefix walk of 8 Finds, 8
// content lookups, one span search), plus InsertBatch of 64 rows (what the write-back thread
// commits at a time). The target for the whole lookup is < 1 ms at 10k chunks and < 5 ms at
// 100k.
//
//   reprise_catalog_bench [--benchmark_filter=...]
// Building the 100k catalog takes a while on first use (reported as "build_s").
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/random.h"
#include "kv/chunk.h"
#include "kv/span_fingerprints.h"
#include "store/catalog.h"

namespace reprise::store {
namespace {

constexpr int kChunksPerDocument = 8;
constexpr int kTokensPerChunk = 512;
constexpr uint64_t kFingerprint = 1;
constexpr std::string_view kNamespace = "bench";

struct BenchChunk {
  kv::ChunkId id;
  kv::ChunkId parent;
  kv::ContentHash content;
  std::vector<int32_t> tokens;
};

// A catalog of `num_chunks` rows in a temporary folder, built once per size.
struct BenchCatalog {
  std::string dir;
  std::unique_ptr<Catalog> catalog;
  std::vector<BenchChunk> chunks;
  double build_s = 0;

  ~BenchCatalog() {
    catalog.reset();
    std::error_code error;
    std::filesystem::remove_all(dir, error);
  }
};

BenchCatalog& GetCatalog(int num_chunks) {
  static std::map<int, std::unique_ptr<BenchCatalog>> catalogs;
  auto& slot = catalogs[num_chunks];
  if (slot) return *slot;
  slot = std::make_unique<BenchCatalog>();
  BenchCatalog& bench = *slot;
  std::string dir = std::filesystem::temp_directory_path().string() + "/reprise_catalog_XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) std::abort();
  bench.dir = dir;
  auto opened = Catalog::Open(dir + "/catalog.db");
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    std::abort();
  }
  bench.catalog = std::move(opened).value();

  Random random(static_cast<uint64_t>(num_chunks));
  const auto start = std::chrono::steady_clock::now();
  std::vector<CatalogRow> batch;
  kv::ChunkId parent = kv::kRootChunkId;
  for (int i = 0; i < num_chunks; ++i) {
    if (i % kChunksPerDocument == 0) parent = kv::kRootChunkId;
    CatalogRow row;
    row.name_space = std::string(kNamespace);
    row.tokens.resize(kTokensPerChunk);
    for (int32_t& token : row.tokens) token = static_cast<int32_t>(random.NextBelow(150000));
    row.content_hash = kv::HashTokens(kFingerprint, row.tokens);
    row.chunk_id = kv::ChainId(parent, row.content_hash);
    row.parent_id = parent;
    row.exact = true;
    row.model_fingerprint = kFingerprint;
    row.codec = KvCodec::kInt8;
    row.file_name = std::to_string(i) + ".rpkv";
    row.file_bytes = 6000000;
    row.created_us = i;
    row.last_access_us = i;
    bench.chunks.push_back({row.chunk_id, parent, row.content_hash, row.tokens});
    parent = row.chunk_id;
    batch.push_back(std::move(row));
    if (batch.size() == 256 || i + 1 == num_chunks) {
      auto ids = bench.catalog->InsertBatch(batch);
      if (!ids.ok()) {
        std::fprintf(stderr, "insert: %s\n", ids.status().ToString().c_str());
        std::abort();
      }
      batch.clear();
    }
  }
  bench.build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bench;
}

// The fingerprints of a 512-token prompt span that holds 64 tokens of one chunk among new
// ones: the planner's query for a chunk that missed the prefix tree and the content hash.
std::vector<uint64_t> MakeSpanQuery(const BenchChunk& chunk, Random& random) {
  std::vector<int32_t> tokens(kTokensPerChunk);
  for (int32_t& token : tokens) token = static_cast<int32_t>(random.NextBelow(150000));
  const size_t from = random.NextBelow(kTokensPerChunk - 64);
  std::copy(chunk.tokens.begin() + static_cast<ptrdiff_t>(from),
            chunk.tokens.begin() + static_cast<ptrdiff_t>(from + 64), tokens.begin() + 200);
  return kv::SpanFingerprints(tokens);
}

void ReportSize(benchmark::State& state, const BenchCatalog& bench) {
  state.counters["chunks"] = static_cast<double>(bench.chunks.size());
  state.counters["build_s"] = bench.build_s;
}

void BM_Find(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(1);
  for (auto _ : state) {
    const BenchChunk& chunk = bench.chunks[random.NextBelow(bench.chunks.size())];
    auto row = bench.catalog->Find(kNamespace, chunk.id);
    if (!row.ok() || !row->has_value()) state.SkipWithError("find failed");
    benchmark::DoNotOptimize(row);
  }
  ReportSize(state, bench);
}

void BM_FindMiss(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(2);
  for (auto _ : state) {
    auto row = bench.catalog->Find(kNamespace, random.NextU64());
    if (!row.ok() || row->has_value()) state.SkipWithError("unexpected hit");
    benchmark::DoNotOptimize(row);
  }
}

void BM_FindByContent(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(3);
  for (auto _ : state) {
    const BenchChunk& chunk = bench.chunks[random.NextBelow(bench.chunks.size())];
    auto row = bench.catalog->FindByContent(kNamespace, chunk.content);
    if (!row.ok() || !row->has_value()) state.SkipWithError("find by content failed");
    benchmark::DoNotOptimize(row);
  }
}

void BM_Children(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(4);
  for (auto _ : state) {
    // A chunk inside a document: its parent has one child.
    const BenchChunk& chunk = bench.chunks[random.NextBelow(bench.chunks.size())];
    auto rows = bench.catalog->Children(kNamespace, chunk.id);
    if (!rows.ok()) state.SkipWithError("children failed");
    benchmark::DoNotOptimize(rows);
  }
}

void BM_ChildrenOfRoot(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    // Every document's first chunk hangs under the root: the worst case, capped at 256 rows.
    auto rows = bench.catalog->Children(kNamespace, kv::kRootChunkId);
    if (!rows.ok()) state.SkipWithError("children failed");
    benchmark::DoNotOptimize(rows);
  }
}

void BM_SearchSpans(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(8);
  std::vector<std::vector<uint64_t>> queries;
  std::vector<int64_t> sources;
  for (int i = 0; i < 64; ++i) {
    const size_t source = random.NextBelow(bench.chunks.size());
    queries.push_back(MakeSpanQuery(bench.chunks[source], random));
    sources.push_back(static_cast<int64_t>(source) + 1);  // row ids follow insertion from 1
  }
  size_t next = 0;
  int64_t num_results = 0, num_source_first = 0;
  for (auto _ : state) {
    const size_t q = next++ % queries.size();
    auto found = bench.catalog->SearchSpans(kNamespace, queries[q], 256, 32);
    if (!found.ok()) state.SkipWithError(found.status().ToString().c_str());
    if (!found.ok()) break;
    num_results += static_cast<int64_t>(found->size());
    num_source_first += !found->empty() && (*found)[0].row_id == sources[q];
  }
  state.counters["results_per_query"] =
      static_cast<double>(num_results) / static_cast<double>(state.iterations());
  state.counters["source_first"] =
      static_cast<double>(num_source_first) / static_cast<double>(state.iterations());
}

// One prompt's lookup: the prefix walk down a stored document (8 hits), a content lookup for
// each of 8 chunks, and one span search.
void BM_WholeLookup(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(6);
  const size_t num_documents = bench.chunks.size() / kChunksPerDocument;
  for (auto _ : state) {
    const size_t document = random.NextBelow(num_documents);
    for (int i = 0; i < kChunksPerDocument; ++i) {
      const BenchChunk& chunk =
          bench.chunks[document * kChunksPerDocument + static_cast<size_t>(i)];
      auto row = bench.catalog->Find(kNamespace, chunk.id);
      benchmark::DoNotOptimize(row);
    }
    for (int i = 0; i < kChunksPerDocument; ++i) {
      const BenchChunk& chunk = bench.chunks[random.NextBelow(bench.chunks.size())];
      auto row = bench.catalog->FindByContent(kNamespace, chunk.content);
      benchmark::DoNotOptimize(row);
    }
    const std::vector<uint64_t> query =
        MakeSpanQuery(bench.chunks[random.NextBelow(bench.chunks.size())], random);
    auto ids = bench.catalog->SearchSpans(kNamespace, query, 256, 32);
    benchmark::DoNotOptimize(ids);
  }
}

void BM_InsertBatch64(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(7);
  std::vector<int64_t> inserted;
  for (auto _ : state) {
    std::vector<CatalogRow> rows(64);
    for (CatalogRow& row : rows) {
      row.name_space = "insert-bench";
      row.chunk_id = random.NextU64();
      row.content_hash = random.NextU64();
      // Another chunk's tokens: ~40 span fingerprints to index, as a real chunk has.
      row.tokens = bench.chunks[random.NextBelow(bench.chunks.size())].tokens;
      row.file_name = "x.rpkv";
    }
    auto ids = bench.catalog->InsertBatch(rows);
    if (!ids.ok()) state.SkipWithError(ids.status().ToString().c_str());
    if (ids.ok()) inserted.insert(inserted.end(), ids->begin(), ids->end());
  }
  state.SetItemsProcessed(state.iterations() * 64);
  // Leave the catalog as it was for the other benchmarks (after the timed loop).
  if (!bench.catalog->Delete(inserted).ok()) std::abort();
}

#define REPRISE_CATALOG_SIZES Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_Find)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_FindMiss)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_FindByContent)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_Children)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_ChildrenOfRoot)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_SearchSpans)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_WholeLookup)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_InsertBatch64)->REPRISE_CATALOG_SIZES;

}  // namespace
}  // namespace reprise::store

BENCHMARK_MAIN();
