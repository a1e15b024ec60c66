// The AVX2 matmul (matmul_avx2_tiles.h, without VNNI), compiled with -mavx2 -mfma -mf16c.

#include "kernels/kernel_impl.h"
#include "kernels/matmul_avx2_tiles.h"

namespace reprise::kernels::avx2 {

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  MatMulAvx2<false>(w, x, out, m_begin, m_end, n_begin, n_end);
}

}  // namespace reprise::kernels::avx2
