// The scalar set's peak loops: int32 and float multiply-adds in general-purpose and scalar
// float registers (the compiler may vectorise neither: each accumulator is a dependency chain
// whose inputs it cannot see).
#include "kernels/kernel_impl.h"

namespace reprise::kernels::scalar {
namespace {

constexpr int kAccumulators = 12;

int64_t Int8Loop(int64_t rounds) {
  uint32_t acc[kAccumulators] = {};  // unsigned: wraps on long runs instead of overflowing
  uint32_t a = 3;
  uint32_t b = 5;
  for (int64_t r = 0; r < rounds; ++r) {
    asm volatile("" : "+r"(a), "+r"(b));
    for (int i = 0; i < kAccumulators; ++i) acc[i] += a * b;
  }
  int64_t sink = 0;
  for (uint32_t v : acc) sink += v;
  return sink;
}

int64_t Float32Loop(int64_t rounds) {
  float acc[kAccumulators] = {};
  float a = 1.0f;
  float b = 1.0f;
  for (int64_t r = 0; r < rounds; ++r) {
#if defined(__x86_64__) || defined(__i386__)
    asm volatile("" : "+x"(a), "+x"(b));
#elif defined(__aarch64__)
    asm volatile("" : "+w"(a), "+w"(b));
#endif
    for (int i = 0; i < kAccumulators; ++i) acc[i] += a * b;
  }
  float sink = 0;
  for (float v : acc) sink += v;
  return static_cast<int64_t>(sink);
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"int32 multiply-add (scalar)", kAccumulators, Int8Loop}; }
PeakLoop Float32PeakLoop() { return {"float multiply-add (scalar)", kAccumulators, Float32Loop}; }

}  // namespace reprise::kernels::scalar
