#include "cli/out_of_order_flags.h"

#include "cli/option_checks.h"

namespace reprise::cli {

void OutOfOrderFlags::Register(CLI::App& sub) {
  sub.add_option("--out-of-order", groups,
                 "Run a multi-call prefill's (call, shard) subgraphs out of order on this many "
                 "worker groups (the threads split among them); 0 = in order")
      ->default_val(0)
      ->check(IntegerIn(0, 64));
  sub.add_option("--ooo-window", window, "--out-of-order: calls in flight, at most")
      ->default_val(2)
      ->check(IntegerIn(1, 64));
}

}  // namespace reprise::cli
