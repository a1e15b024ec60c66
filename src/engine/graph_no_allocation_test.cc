// Running a compiled graph must not allocate: this binary replaces the global allocation
// functions with counting ones and runs prefill and decode graphs between two readings.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "convert/model_maker.h"
#include "engine/graph_backend.h"
#include "support/temp_dir.h"

namespace {
// Relaxed: only totals read after the threads have joined the region matter.
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
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

TEST(GraphNoAllocationTest, RunningGraphsAllocatesNothing) {
  testing_support::TempDir dir;
  for (const char* shape : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    const std::string path = dir.path() + "/" + shape + ".gguf";
    convert::MakeModelOptions options;
    options.shape = shape;
    options.weight_type = DType::kQ8_0;
    ASSERT_TRUE(convert::MakeModel(options, path).ok());
    std::unique_ptr<LoadedModel> model = std::move(LoadedModel::Load(path)).value();
    GraphBackendOptions backend_options;
    backend_options.context_tokens = 64;
    backend_options.prefill_capacity = 16;
    auto backend = std::move(GraphBackend::Create(*model, backend_options)).value();
    std::vector<int32_t> prompt(40, 7);
    const int32_t next[] = {9};
    // Warm up: the kernels' per-thread scratch is allocated at a thread's first matmul
    // (kernels/matmul_scratch.h), and which pool thread runs which range varies.
    for (int round = 0; round < 2; ++round) {
      ASSERT_TRUE(backend->Append(prompt).ok());
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(backend->Append(next).ok());
      backend->Truncate(0);
    }
    const long before = g_allocations.load();
    ASSERT_TRUE(backend->Append(prompt).ok());  // 3 prefill chunks, the last padded
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(backend->Append(next).ok());
    const long after = g_allocations.load();
    EXPECT_EQ(after - before, 0) << shape;
  }
}

// The counter works: an allocation is seen.
TEST(GraphNoAllocationTest, CounterSeesAllocations) {
  const long before = g_allocations.load();
  auto* p = new std::vector<int>(100);
  delete p;
  EXPECT_GE(g_allocations.load() - before, 2);
}

}  // namespace
}  // namespace reprise::engine
