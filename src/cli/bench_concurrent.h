// `reprise bench concurrent`: aggregate decode tokens/s of N requests running at once on one
// engine (N sessions), with the sessions' decode steps batched into one graph call per step
// and with each session decoding on its own — both measured in the same run, alternating, so
// the ratio holds on a noisy machine.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace reprise::cli {

class BenchConcurrent {
 public:
  // Adds the `concurrent` subcommand to `bench`.
  void Register(CLI::App& bench);
  bool parsed() const { return sub_ != nullptr && sub_->parsed(); }
  int Run();

 private:
  CLI::App* sub_ = nullptr;
  std::string model_path_;
  int threads_ = 0;
  int context_ = 0;
  int clients_ = 4;
  int tokens_ = 128;
  int prompt_tokens_ = 64;
  int repetitions_ = 2;
  bool json_ = false;
};

}  // namespace reprise::cli
