// --int8 and --outlier-fraction: the int8 arithmetic of the layers' matmuls (reprise::
// Int8Scheme; docs/design.md §9), shared by run, serve and the benchmarks.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "reprise/engine.h"

namespace reprise::cli {

struct Int8Flags {
  std::string scheme_name = "per-block";
  double outlier_fraction = 0.01;

  void Register(CLI::App& sub);
  // After parsing (the name was checked then).
  Int8Scheme scheme() const;
};

}  // namespace reprise::cli
