// --out-of-order G and --ooo-window W: out-of-order subgraph scheduling of multi-call
// prefills (reprise::EngineOptions::out_of_order_groups), shared by run and the benchmarks.
#pragma once

#include <CLI/CLI.hpp>

namespace reprise::cli {

struct OutOfOrderFlags {
  int groups = 0;
  int window = 2;

  void Register(CLI::App& sub);
};

}  // namespace reprise::cli
