// `reprise bench sessions`: what a second session costs in memory next to what a second
// engine (a second model load, the only way before the program / session split) costs, both
// measured in the same run (resident set growth, MiB). Each runs one request that fills its
// context by default, so that its whole KV cache (reserved and mapped, resident only where
// written) counts.
#pragma once

#include <CLI/CLI.hpp>

namespace reprise::cli {

class BenchSessions {
 public:
  // Adds the `sessions` subcommand to `bench`.
  void Register(CLI::App& bench);
  bool parsed() const { return sub_ != nullptr && sub_->parsed(); }
  int Run();

 private:
  CLI::App* sub_ = nullptr;
  std::string model_path_;
  int threads_ = 0;
  int context_ = 0;
  int sessions_ = 4;
  int prompt_tokens_ = 0;  // 0 = fill the context
  bool json_ = false;
};

}  // namespace reprise::cli
