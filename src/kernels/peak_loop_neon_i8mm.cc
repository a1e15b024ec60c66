// The neon-i8mm set's int8 peak loop: `smmla` (a 2 x 8 by 8 x 2 int8 matrix product added into
// a 2 x 2 int32 block: 32 multiply-adds per instruction) in the shared loop
// (peak_loop_neon_int8.h). Compiled with the I8MM flags; its float loop is the neon-dotprod
// set's.
#include <arm_neon.h>

#include "kernels/kernel_impl.h"
#include "kernels/peak_loop_neon_int8.h"

namespace reprise::kernels::neon_i8mm {
namespace {

// Each smmla is 2 x 2 x 8 = 32 multiply-adds.
int64_t Int8Loop(int64_t rounds) {
  return Int8PeakRounds(
      rounds, [](int32x4_t acc, int8x16_t a, int8x16_t b) { return vmmlaq_s32(acc, a, b); });
}

}  // namespace

PeakLoop Int8PeakLoop() { return {"smmla (NEON I8MM)", kInt8PeakAccumulators * 32, Int8Loop}; }

}  // namespace reprise::kernels::neon_i8mm
