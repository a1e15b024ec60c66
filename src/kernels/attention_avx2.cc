// The AVX2 attention (attention_avx2_blocks.h), compiled with -mavx2 -mfma -mf16c.

#include "kernels/attention_avx2_blocks.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels::avx2 {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::avx2
