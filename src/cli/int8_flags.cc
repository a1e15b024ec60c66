#include "cli/int8_flags.h"

#include "cli/option_checks.h"

namespace reprise::cli {

void Int8Flags::Register(CLI::App& sub) {
  sub.add_option("--int8", scheme_name,
                 "Int8 arithmetic of the layers' matmuls: per-block (a scale per 32 "
                 "activations at run time), per-tensor (an NPU's: one static scale per tensor, "
                 "int32 over the whole row) or shadow (per-tensor, with the outlier channels in "
                 "float); the static ones use `reprise calibrate --activations` or measure the "
                 "model's ranges at load")
      ->default_val("per-block")
      ->check(CLI::IsMember({"per-block", "per-tensor", "shadow"}));
  sub.add_option("--outlier-fraction", outlier_fraction,
                 "--int8 shadow: the share of the layers' input channels computed in float")
      ->default_val(0.01)
      ->check(FiniteIn(0.0, 0.5));
}

Int8Scheme Int8Flags::scheme() const {
  Result<Int8Scheme> scheme = ParseInt8Scheme(scheme_name);
  return scheme.ok() ? *scheme : Int8Scheme::kPerBlock;
}

}  // namespace reprise::cli
