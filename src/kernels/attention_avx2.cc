// The AVX2 attention (attention_x86_tiles.h on ymm), compiled with -mavx2 -mfma -mf16c.

#include "kernels/attention_x86_tiles.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels::avx2 {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl<Ymm>(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::avx2
