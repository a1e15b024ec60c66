#include "kernels/machine_peak.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace reprise::kernels {
namespace {

std::vector<const KernelSet*> RunnableSets() {
  std::vector<const KernelSet*> sets = {&ScalarKernels()};
  for (const KernelSet* set : {Avx2Kernels(), AvxVnniKernels(), Avx512VnniKernels(),
                               NeonDotKernels(), NeonI8mmKernels()}) {
    if (set != nullptr) sets.push_back(set);
  }
  return sets;
}

TEST(PeakLoopTest, EveryLoopDoesWorkInProportionToItsRounds) {
  // A loop the compiler had hoisted or dropped would return the same value for any count.
  for (const KernelSet* set : RunnableSets()) {
    for (const PeakLoop* loop : {&set->int8_peak, &set->float_peak}) {
      SCOPED_TRACE(std::string(set->name) + ": " + loop->instruction);
      ASSERT_NE(loop->run, nullptr);
      EXPECT_GT(loop->macs_per_round, 0);
      const int64_t once = loop->run(500);
      EXPECT_NE(once, 0);
      EXPECT_EQ(loop->run(1000), 2 * once);
      EXPECT_EQ(loop->run(0), 0);
    }
  }
}

TEST(MachinePeakTest, MeasuresEveryRateOfTheSetOnTheThreadsAsked) {
  const KernelSet& set = BestKernels();
  const MachinePeak peak = MeasureMachinePeak(set, 2, 0.005);
  EXPECT_EQ(peak.kernels, set.name);
  EXPECT_EQ(peak.threads, 2);
  EXPECT_EQ(peak.int8_instruction, set.int8_peak.instruction);
  EXPECT_EQ(peak.float_instruction, set.float_peak.instruction);
  EXPECT_GT(peak.int8_gmacs_per_second, 0);
  EXPECT_GT(peak.float_gmacs_per_second, 0);
  EXPECT_GT(peak.read_gb_per_second, 0);
}

}  // namespace
}  // namespace reprise::kernels
