// The attention of attention_x86_tiles.h on zmm registers, compiled with the AVX-512 flags
// (REPRISE_AVX512_VNNI_FLAGS).

#include "kernels/attention_x86_tiles.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels::avx512 {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl<Zmm>(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::avx512
