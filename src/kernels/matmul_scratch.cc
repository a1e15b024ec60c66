#include "kernels/matmul_scratch.h"

#include <vector>

namespace reprise::kernels {

uint8_t* ThreadMatMulScratch(MatMulScratch which, int64_t bytes) {
  static thread_local std::vector<uint8_t> buffers[2];
  if (buffers[0].empty()) {  // the thread's first use: both kinds at once
    for (std::vector<uint8_t>& buffer : buffers) buffer.resize(kMinMatMulScratchBytes);
  }
  std::vector<uint8_t>& buffer = buffers[static_cast<int>(which)];
  if (buffer.size() < static_cast<size_t>(bytes)) buffer.resize(static_cast<size_t>(bytes));
  return buffer.data();
}

void ReserveThreadMatMulScratch() { ThreadMatMulScratch(MatMulScratch::kPreparedWeights, 0); }

}  // namespace reprise::kernels
