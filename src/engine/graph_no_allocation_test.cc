// Running a compiled graph must not allocate: this binary counts every allocation — the
// global operator new and, outside sanitizer builds (whose runtime owns malloc), the C
// allocation functions too — and runs every kind of graph between two readings: prefill,
// decode, selective recompute, the query probe and batched decode.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>

#include "convert/model_maker.h"
#include "engine/decode_batcher.h"
#include "engine/graph_backend.h"
#include "support/temp_dir.h"

// This file is the allocator: its operator delete frees what its operator new took from malloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
// Relaxed: only totals read after the threads have joined the region matter.
std::atomic<long> g_allocations{0};
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REPRISE_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REPRISE_COUNT_MALLOC 0
#endif
#endif
#ifndef REPRISE_COUNT_MALLOC
#define REPRISE_COUNT_MALLOC 1
#endif

#if REPRISE_COUNT_MALLOC
// glibc's own entry points, which the counting versions below forward to.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);

void* malloc(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"
#define REPRISE_COUNT_NEW(expression) (expression)  // counted by malloc
#else
#define REPRISE_COUNT_NEW(expression) \
  (g_allocations.fetch_add(1, std::memory_order_relaxed), (expression))
#endif

void* operator new(std::size_t size) {
  if (void* p = REPRISE_COUNT_NEW(std::malloc(size == 0 ? 1 : size))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return REPRISE_COUNT_NEW(std::malloc(size == 0 ? 1 : size));
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align) {
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = REPRISE_COUNT_NEW(std::aligned_alloc(a, (size + a - 1) / a * a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace reprise::engine {
namespace {

constexpr int kContext = 128;
constexpr int kRecomputeCapacity = 32;
constexpr int kProbeCapacity = 8;

// Runs every graph a session has once: a 40-token prefill in 3 calls (the last padded), 5
// decode steps, a recompute call over 24 reused rows (with its residual and guard), a query
// probe over them, and a second recompute ranked by the probe's attention.
void RunEveryGraph(GraphBackend& backend) {
  static const std::vector<int32_t> prompt(40, 7);
  ASSERT_TRUE(backend.Append(prompt).ok());
  const int32_t next[] = {9};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(backend.Append(next).ok());
  // The last 24 tokens of the sequence, as if their KV were reused.
  static const std::vector<int32_t> tokens(24, 11);
  static const std::vector<int32_t> positions = [] {
    std::vector<int32_t> p(24);
    for (int i = 0; i < 24; ++i) p[static_cast<size_t>(i)] = 21 + i;
    return p;
  }();
  static const std::vector<uint8_t> forced = [] {
    std::vector<uint8_t> f(24, graph::kRowSelectable);
    f.back() = graph::kRowForced;
    return f;
  }();
  ASSERT_TRUE(backend.RunRecompute(tokens, positions, positions, forced, 45).ok());
  Result<std::span<const float>> attention = backend.RunQueryProbe(
      std::span(tokens).last(kProbeCapacity), std::span(positions).last(kProbeCapacity),
      std::span(positions).last(kProbeCapacity), 45);
  ASSERT_TRUE(attention.ok()) << attention.error().ToString();
  static std::vector<float> row_attention(24);
  std::copy_n(attention->begin() + 21, 24, row_attention.begin());
  ASSERT_TRUE(backend
                  .RunRecompute(tokens, positions, positions, forced, 45, row_attention,
                                TokenSelection::kAttentionTimesDeviation)
                  .ok());
  backend.Truncate(0);
}

GraphBackendOptions EveryGraph() {
  GraphBackendOptions options;
  options.context_tokens = kContext;
  options.prefill_capacity = 16;
  options.recompute_capacity = kRecomputeCapacity;
  options.guard_deviation = 1e-3;  // the guard's check runs too
  options.recompute_min_deviation = 1e-4;
  options.query_probe_capacity = kProbeCapacity;
  return options;
}

class GraphNoAllocationTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/m.gguf";
    convert::MakeModelOptions options;
    options.shape = GetParam();
    options.weight_type = DType::kQ8_0;
    ASSERT_TRUE(convert::MakeModel(options, path_).ok());
    model_ = std::move(LoadedModel::Load(path_)).value();
  }
  testing_support::TempDir dir_;
  std::string path_;
  std::unique_ptr<LoadedModel> model_;
};

TEST_P(GraphNoAllocationTest, RunningEveryGraphAllocatesNothing) {
  auto backend = std::move(GraphBackend::Create(*model_, EveryGraph())).value();
  ASSERT_TRUE(backend->has_recompute_graph());
  ASSERT_TRUE(backend->has_query_probe());
  // Warm up: the kernels' per-thread scratch is allocated at a thread's first matmul
  // (kernels/matmul_scratch.h), and which pool thread runs which range varies.
  for (int round = 0; round < 2; ++round) RunEveryGraph(*backend);
  const long before = g_allocations.load();
  RunEveryGraph(*backend);
  const long after = g_allocations.load();
  EXPECT_EQ(after - before, 0) << GetParam();
}

// Two sessions decoding at once through a DecodeBatcher: the batch graph allocates nothing
// either (the batcher's own bookkeeping is planned at Create).
TEST_P(GraphNoAllocationTest, BatchedDecodeStepsAllocateNothing) {
  auto compiled =
      std::move(CompiledModel::Create(*model_, CompiledModelOptions{.num_threads = 2})).value();
  // Both sessions step every round, so the batcher never waits this long; it is long so that a
  // thread descheduled on a loaded machine does not turn a batched step into a solo one (a
  // batch shape the rounds did not warm up, whose scratch would count as an allocation).
  auto batcher =
      std::move(DecodeBatcher::Create(compiled, 2, std::chrono::seconds(30))).value();
  GraphBackendOptions options;
  options.context_tokens = kContext;
  options.prefill_capacity = 16;
  options.decode_batcher = batcher.get();
  auto a = std::move(GraphBackend::Create(compiled, options)).value();
  auto b = std::move(GraphBackend::Create(compiled, options)).value();
  const std::vector<int32_t> prompt(20, 7);
  ASSERT_TRUE(a->Append(prompt).ok());
  ASSERT_TRUE(b->Append(prompt).ok());
  const int32_t next[] = {9};
  constexpr int kRounds = 3;  // the first warms up each thread's matmul scratch
  std::barrier sync(2);       // the start and the end of each round
  std::atomic<bool> other_ok{true};
  // One thread for b through every round: a thread allocates its scratch at its first matmul.
  std::thread other([&] {
    for (int round = 0; round < kRounds; ++round) {
      sync.arrive_and_wait();
      for (int i = 0; i < 4; ++i) {
        if (!b->Append(next).ok()) other_ok = false;
      }
      sync.arrive_and_wait();
    }
  });
  long allocated = 0;
  const int64_t rows_before = batcher->stats().rows;
  for (int round = 0; round < kRounds; ++round) {
    // Both join before either steps, so that each step waits for the other.
    auto pa = std::make_unique<DecodeBatcher::Participant>(batcher.get());
    auto pb = std::make_unique<DecodeBatcher::Participant>(batcher.get());
    const long before = g_allocations.load();
    sync.arrive_and_wait();
    bool ok = true;
    for (int i = 0; i < 4; ++i) ok = ok && a->Append(next).ok();
    sync.arrive_and_wait();
    const long after = g_allocations.load();
    EXPECT_TRUE(ok);
    if (round > 0) allocated += after - before;
  }
  other.join();
  ASSERT_TRUE(other_ok);
  EXPECT_EQ(allocated, 0);
  EXPECT_EQ(batcher->stats().rows - rows_before, kRounds * 8);
  EXPECT_GT(batcher->stats().max_rows, 1);  // the steps did run together
}

INSTANTIATE_TEST_SUITE_P(Shapes, GraphNoAllocationTest,
                         ::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3"));

// The counters work: operator new and the C allocation functions are seen.
TEST(AllocationCounterTest, SeesAllocations) {
  long before = g_allocations.load();
  auto* p = new std::vector<int>(100);
  delete p;
  EXPECT_GE(g_allocations.load() - before, 2);
#if REPRISE_COUNT_MALLOC
  before = g_allocations.load();
  void* volatile q = std::malloc(64);
  std::free(q);
  void* volatile r = std::calloc(4, 16);
  std::free(r);
  EXPECT_EQ(g_allocations.load() - before, 2);
#endif
}

}  // namespace
}  // namespace reprise::engine
