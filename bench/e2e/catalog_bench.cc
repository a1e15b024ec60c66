// Catalog lookup latency at the sizes DESIGN.md §6 plans for: 10,000 and 100,000 chunks.
//
// Each catalog holds documents of 8 chunks chained in the prefix tree; a chunk has 512 token
// ids and ~380 words of text drawn from a Zipf distribution over a 50,000-word vocabulary
// (roughly like English). Measured: Find, FindByContent, Children, SearchText, SearchSpans
// (the span fingerprint search of sub-chunk candidates) and the whole lookup of one prompt (a
// prefix walk of 8 Finds, 8 content lookups, one span search), plus InsertBatch of 64 rows. The target for the whole lookup is < 1 ms at 10k chunks and
// < 5 ms at 100k.
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
constexpr int kWordsPerChunk = 380;
constexpr int kVocabularyWords = 50000;
constexpr uint64_t kFingerprint = 1;
constexpr std::string_view kNamespace = "bench";

// Word r of the synthetic vocabulary: a letters-only name, short for frequent ranks.
std::string WordOf(int rank) {
  std::string word;
  int value = rank + 26;
  while (value > 0) {
    word += static_cast<char>('a' + value % 26);
    value /= 26;
  }
  return word;
}

class ZipfWords {
 public:
  ZipfWords() : cdf_(kVocabularyWords) {
    double sum = 0;
    for (int rank = 0; rank < kVocabularyWords; ++rank) {
      sum += 1.0 / (rank + 1.0);
      cdf_[static_cast<size_t>(rank)] = sum;
    }
    for (double& value : cdf_) value /= sum;
  }
  int Next(Random& random) const {
    const auto at = std::upper_bound(cdf_.begin(), cdf_.end(), random.NextDouble());
    return static_cast<int>(std::min<ptrdiff_t>(at - cdf_.begin(), kVocabularyWords - 1));
  }

 private:
  std::vector<double> cdf_;
};

struct BenchChunk {
  kv::ChunkId id;
  kv::ChunkId parent;
  kv::ContentHash content;
  std::string text;
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
  static const ZipfWords zipf;
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
    for (int w = 0; w < kWordsPerChunk; ++w) {
      if (w > 0) row.text += ' ';
      row.text += WordOf(zipf.Next(random));
    }
    row.model_fingerprint = kFingerprint;
    row.codec = KvCodec::kInt8Hadamard;
    row.file_name = std::to_string(i) + ".rpkv";
    row.file_bytes = 6000000;
    row.created_us = i;
    row.last_access_us = i;
    bench.chunks.push_back({row.chunk_id, parent, row.content_hash, row.text, row.tokens});
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

// ~40 words: 30 from one chunk's text (a question about it) and 10 frequent ones.
std::string MakeQuery(const BenchChunk& chunk, Random& random) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < chunk.text.size()) {
    size_t end = chunk.text.find(' ', start);
    if (end == std::string::npos) end = chunk.text.size();
    words.push_back(chunk.text.substr(start, end - start));
    start = end + 1;
  }
  std::string query;
  for (int i = 0; i < 30; ++i) query += words[random.NextBelow(words.size())] + " ";
  for (int i = 0; i < 10; ++i) query += WordOf(static_cast<int>(random.NextBelow(20))) + " ";
  return query;
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

void BM_SearchText(benchmark::State& state) {
  BenchCatalog& bench = GetCatalog(static_cast<int>(state.range(0)));
  Random random(5);
  std::vector<std::string> queries;
  for (int i = 0; i < 64; ++i) {
    queries.push_back(MakeQuery(bench.chunks[random.NextBelow(bench.chunks.size())], random));
  }
  size_t next = 0;
  int64_t num_results = 0;
  for (auto _ : state) {
    auto ids = bench.catalog->SearchText(kNamespace, queries[next++ % queries.size()], 8);
    if (!ids.ok()) state.SkipWithError(ids.status().ToString().c_str());
    num_results += ids.ok() ? static_cast<int64_t>(ids->size()) : 0;
  }
  state.counters["results_per_query"] =
      static_cast<double>(num_results) / static_cast<double>(state.iterations());
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
      row.tokens.assign(kTokensPerChunk, 5);
      row.text = bench.chunks[random.NextBelow(bench.chunks.size())].text;
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
BENCHMARK(BM_SearchText)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_SearchSpans)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_WholeLookup)->REPRISE_CATALOG_SIZES;
BENCHMARK(BM_InsertBatch64)->REPRISE_CATALOG_SIZES;

}  // namespace
}  // namespace reprise::store

BENCHMARK_MAIN();
