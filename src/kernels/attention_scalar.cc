// Scalar reference attention (attention.h): one (query, head) at a time, one slot at a time,
// with the online softmax update. Simple rather than fast; it is the portable fallback and
// the twin the AVX2 kernel is tested against.

#include <cmath>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels::scalar {

void Attention(const AttentionArgs& args, int64_t query_begin, int64_t query_end,
               int64_t head_begin, int64_t head_end) {
  const int64_t hd = args.head_dim;
  REPRISE_DCHECK(hd > 0 && hd <= kMaxAttentionHeadDim);
  REPRISE_DCHECK(args.num_kv_heads > 0 && args.num_heads % args.num_kv_heads == 0);
  REPRISE_DCHECK(args.num_slots <= args.capacity);
  const int64_t group = args.num_heads / args.num_kv_heads;
  float acc[kMaxAttentionHeadDim];
  for (int64_t i = query_begin; i < query_end; ++i) {
    const int32_t query_position = args.query_positions[i];
    for (int64_t h = head_begin; h < head_end; ++h) {
      const float* q = args.q + i * args.q_stride + h * hd;
      float* out = args.out + i * args.out_stride + h * hd;
      const int64_t kv_head = h / group;
      const uint16_t* k_head = args.k_cache + kv_head * args.capacity * hd;
      const uint16_t* v_head = args.v_cache + kv_head * args.capacity * hd;
      for (int64_t d = 0; d < hd; ++d) acc[d] = 0.0f;
      float max = -INFINITY;
      float sum = 0.0f;
      if (query_position >= 0) {
        for (int64_t s = 0; s < args.num_slots; ++s) {
          const int32_t slot_position = args.slot_positions[s];
          if (slot_position < 0 || slot_position > query_position) continue;
          const uint16_t* k = k_head + s * hd;
          float dot = 0.0f;
          for (int64_t d = 0; d < hd; ++d) dot += q[d] * F16ToF32(k[d]);
          const float score = dot * args.scale;
          if (score > max) {
            const float alpha = std::exp(max - score);  // 0 for the first visible slot
            sum *= alpha;
            for (int64_t d = 0; d < hd; ++d) acc[d] *= alpha;
            max = score;
          }
          const float p = std::exp(score - max);
          sum += p;
          const uint16_t* v = v_head + s * hd;
          for (int64_t d = 0; d < hd; ++d) acc[d] += p * F16ToF32(v[d]);
        }
      }
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      for (int64_t d = 0; d < hd; ++d) out[d] = acc[d] * inv;
    }
  }
}

}  // namespace reprise::kernels::scalar
