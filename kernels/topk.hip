// topk.hip: the biased sigmoid top-k router, one source for HIP, CUDA and the CPU
// executor (see topk.h for the contract).
//
// One warp per row, no shared memory.  Lane l owns experts l, l + warpSize, ... and
// keeps, in registers (kPerLane slots, fully unrolled: no dynamic register indexing,
// no scratch), each expert's s and its rank key: a 64-bit integer that orders
// (c desc, id asc) exactly as the bit model does (c's bits mapped to an unsigned order,
// then the complemented id).  The lane sorts its slots once (bitonic network); each of
// the k rounds is then a butterfly of 64-bit shuffles over the lanes' heads (every
// lane ends with the warp's best), the owner broadcasts its head's s and pops it
// (empty slots hold key 0, below every real key), lane r keeps rank r.  The total order makes the result independent of the warp size
// and of the lane layout.  Every lane then forms the sum in rank order (the same fp32
// additions, gathered by shuffles), and lane r writes rank r.
// AMD budget: the per-lane slots live in VGPRs (no scratch, by design), so the 16-slot
// instance is the heaviest; at large T the kernel is throughput-bound and needs 4 waves
// per SIMD to overlap one warp's shuffle chain with others' loads.  (SGPR spills, which
// the compiler sends to VGPR lanes, not memory, are reported but allowed.)
// AMD budget: topk_kernel >= 4 waves/SIMD
#include <climits>

#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"
#include "topk.h"

namespace hy4 {
namespace {

// Experts per lane (kPerLane): the launch picks 8 for E <= 256 (HY V4: fewer
// instructions on the serial path) and 16 for E <= 512, enough at warp 32; wave64
// leaves half of them empty.

// (c desc, id asc) as one unsigned key: larger is better.  c is never NaN here (NaN
// was mapped to -inf) and never -0 (+0 + -0 = +0; normalised anyway so that -0 and +0
// tie, as float comparison makes them in the bit model).
HY4_DEVICE inline uint64_t rank_key(float c, int id) {
  uint32_t u = f32_bits(c == 0.0f ? 0.0f : c);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(u) << 32) | static_cast<uint32_t>(0xFFFFFFFFu - static_cast<uint32_t>(id));
}
HY4_DEVICE inline int key_id(uint64_t key) { return static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(key)); }
HY4_DEVICE inline uint64_t max_key(uint64_t a, uint64_t b) { return a > b ? a : b; }

template <int kPerLane>
__global__ void HY4_LAUNCH_BOUNDS(TopkPlan::kBlockThreads) topk_kernel(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
                            int64_t rows, int experts, int k, int renormalize, float rsf, const int32_t* num_rows,
                            float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  int64_t real_rows = rows;
  if (num_rows) {
    const int32_t v = *num_rows;
    real_rows = v < 0 ? 0 : (v < rows ? v : rows);
  }
  const float neg_inf = f32_from_bits(0xff800000u);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * warps + warp; t < rows;
       t += static_cast<int64_t>(gridDim.x) * warps) {
    float* w_row = weights + t * weights_stride;
    int32_t* id_row = ids + t * ids_stride;
    if (t >= real_rows) {  // graph-padded row
      for (int r = lane; r < k; r += ws) {
        w_row[r] = 0.0f;
        id_row[r] = -1;
      }
      continue;
    }
    uint64_t key[kPerLane];
    float s_reg[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int e = j * ws + lane;
      key[j] = 0;  // slots past E never compete
      s_reg[j] = 0.0f;
      if (e < experts) {
        const float x = logits_bf16 ? bf16_to_f32(static_cast<const uint16_t*>(logits)[t * logits_stride + e])
                                    : static_cast<const float*>(logits)[t * logits_stride + e];
        const float sv = sigmoid_f32(x);
        const float cv = sv + bias[e];
        key[j] = rank_key(is_nan_f32(cv) ? neg_inf : cv, e);  // NaN chooses like -inf
        s_reg[j] = sv;
      }
    }
    // Sort the lane's slots by key, descending (bitonic network, fully unrolled: the
    // indices are compile-time, so everything stays in registers).  A lane's head is
    // then its best untaken expert.
#pragma unroll
    for (int size = 2; size <= kPerLane; size *= 2)
#pragma unroll
      for (int stride = size / 2; stride > 0; stride /= 2)
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          const int j = i ^ stride;
          if (j > i) {
            const bool descending = (i & size) == 0;
            if (descending == (key[i] < key[j])) {
              const uint64_t tk = key[i];
              key[i] = key[j];
              key[j] = tk;
              const float ts = s_reg[i];
              s_reg[i] = s_reg[j];
              s_reg[j] = ts;
            }
          }
        }
    int my_id = -1;  // rank `lane`'s expert (lanes < k)
    float my_s = 0.0f;
    for (int r = 0; r < k; ++r) {
      uint64_t best = key[0];
#pragma unroll
      for (int m = ws / 2; m > 0; m /= 2) best = max_key(best, dev::shfl_xor(best, m));
      const int best_id = key_id(best);
      const int owner = best_id % ws;
      const float s_sel = dev::shfl_idx(s_reg[0], owner);
      if (lane == owner) {  // pop the head
#pragma unroll
        for (int j = 0; j + 1 < kPerLane; ++j) {
          key[j] = key[j + 1];
          s_reg[j] = s_reg[j + 1];
        }
        key[kPerLane - 1] = 0;
      }
      if (lane == r) {
        my_id = best_id;
        my_s = s_sel;
      }
    }
    // sum in rank order: every lane adds the same values in the same order
    float sum = dev::shfl_idx(my_s, 0);
    for (int r = 1; r < k; ++r) sum = sum + dev::shfl_idx(my_s, r);
    float scale = rsf;
    if (renormalize) scale = rsf / (sum < 1e-20f ? 1e-20f : sum);
    if (lane < k) {
      float w = my_s * scale;
      if (is_nan_f32(w)) w = f32_from_bits(0x7fc00000u);  // canonical NaN
      w_row[lane] = w;
      id_row[lane] = my_id;
    }
  }
}

}  // namespace

void TopkPlan::launch(hy4::rt::Stream stream) const {
  if (args_.logits.rows == 0) return;
#define HY4_TOPK_LAUNCH(kernel)                                                                                  \
  HY4_LAUNCH(kernel, dim3(static_cast<unsigned>(grid_)), dim3(kBlockThreads), stream,                            \
             static_cast<const void*>(args_.logits.data), args_.logits.dtype == DType::BF16 ? 1 : 0,            \
             args_.logits.row_stride, args_.bias, args_.logits.rows, static_cast<int>(args_.logits.cols), args_.k, \
             args_.renormalize ? 1 : 0, args_.routed_scaling_factor, args_.num_rows,                            \
             static_cast<float*>(args_.weights.data), args_.weights.row_stride,                                 \
             static_cast<int32_t*>(args_.ids.data), args_.ids.row_stride)
  if (args_.logits.cols <= kSmallE)
    HY4_TOPK_LAUNCH(topk_kernel<8>);
  else
    HY4_TOPK_LAUNCH(topk_kernel<16>);
#undef HY4_TOPK_LAUNCH
}

}  // namespace hy4
