// The attention of attention_avx2_blocks.h with its scores and V accumulation on zmm
// registers, compiled with the AVX-512 flags (REPRISE_AVX512_VNNI_FLAGS).

#include "kernels/attention_avx2_blocks.h"
#include "kernels/kernel_impl.h"
#include "kernels/x86_intrinsics.h"

namespace reprise::kernels::avx512 {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::avx512
