// The machine's peak for the matmuls' inner loops (kernels/machine_peak.h), per kernel set this
// CPU runs and per thread count: int8 and float multiply-adds per second with each set's
// instruction, and streaming memory reads. `reprise bench prefill` divides the matmuls'
// achieved rate by the same figures for the set it runs.

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_set.h"
#include "kernels/machine_peak.h"

namespace reprise::kernels {
namespace {

constexpr int64_t kRounds = 1 << 20;

void BM_PeakLoop(benchmark::State& state, const kernels::PeakLoop& loop) {
  const int threads = static_cast<int>(state.range(0));
  double seconds = 0;
  for (auto _ : state) {
    const double wall = TimePeakLoop(loop, threads, kRounds);
    seconds += wall;
    state.SetIterationTime(wall);
  }
  const double macs = static_cast<double>(loop.macs_per_round) * kRounds * threads *
                      static_cast<double>(state.iterations());
  state.counters["GMAC/s"] = macs / seconds / 1e9;
  state.SetLabel(loop.instruction);
}

void BM_StreamingRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr size_t kBytes = size_t{256} << 20;
  static const std::unique_ptr<unsigned char[]> buffer = [] {
    std::unique_ptr<unsigned char[]> b(new unsigned char[kBytes]);
    std::memset(b.get(), 1, kBytes);
    return b;
  }();
  for (auto _ : state) state.SetIterationTime(TimeStreamingRead(buffer.get(), kBytes, threads, 1));
  state.SetBytesProcessed(static_cast<int64_t>(kBytes) * state.iterations());
}

void RegisterAll() {
  std::vector<const kernels::KernelSet*> sets = {&kernels::ScalarKernels()};
  for (const kernels::KernelSet* set :
       {kernels::Avx2Kernels(), kernels::AvxVnniKernels(), kernels::Avx512VnniKernels()}) {
    if (set != nullptr) sets.push_back(set);
  }
  for (const kernels::KernelSet* set : sets) {
    for (const auto& [kind, loop] :
         {std::pair{"int8", &set->int8_peak}, std::pair{"float", &set->float_peak}}) {
      const std::string name = std::string("BM_Peak/") + set->name + "/" + kind;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [loop](benchmark::State& s) { BM_PeakLoop(s, *loop); })
          ->Arg(1)
          ->Arg(2)
          ->UseManualTime();
    }
  }
  benchmark::RegisterBenchmark("BM_StreamingRead", BM_StreamingRead)
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime();
}

}  // namespace
}  // namespace reprise::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  reprise::kernels::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
