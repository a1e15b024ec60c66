// `reprise bench accuracy`: the engine's compiled graphs against the float reference forward
// of the same file (or of another, e.g. the F32 original of a quantized file): KL, top-1 and
// greedy continuation agreement on a text (tools/accuracy_bench.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/engine_flags.h"
#include "tools/accuracy_bench.h"

namespace reprise::cli {

class BenchAccuracy {
 public:
  // Adds the `accuracy` subcommand to `bench`.
  void Register(CLI::App& bench);
  bool parsed() const { return sub_ != nullptr && sub_->parsed(); }
  int Run();

 private:
  CLI::App* sub_ = nullptr;
  tools::AccuracyBenchOptions options_;
  std::string text_path_;
  std::string pack_format_;  // a WeightFormatName, or empty
  EngineFlags int8_flags_;  // --int8, --outlier-fraction
  bool json_ = false;
};

}  // namespace reprise::cli
