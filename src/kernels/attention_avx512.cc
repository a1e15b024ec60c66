// The attention of attention_avx2_blocks.h with its scores and V accumulation on zmm
// registers, compiled with the AVX-512 flags (REPRISE_AVX512_VNNI_FLAGS).

// GCC 12 reports its own AVX-512 intrinsics as reading uninitialized values when inlined
// (see matmul_avx512_vnni.cc); silenced in the header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "kernels/attention_avx2_blocks.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels::avx512 {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  AttentionImpl(args, query_begin, query_end, head_begin, head_end);
}

}  // namespace reprise::kernels::avx512
