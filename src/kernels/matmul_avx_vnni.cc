// The AVX-VNNI matmul: the AVX2 tiles (matmul_avx2_tiles.h) with vpdpbusd on ymm for the
// int8 dot products, compiled with the AVX2 flags and -mavxvnni.

#include "kernels/kernel_impl.h"
#include "kernels/matmul_avx2_tiles.h"

namespace reprise::kernels::avx_vnni {

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  MatMulAvx2<true>(w, x, out, m_begin, m_end, n_begin, n_end);
}

}  // namespace reprise::kernels::avx_vnni
