// topk.hip: the biased sigmoid top-k router, one source for HIP, CUDA and the CPU
// executor (see topk.h for the contract).
//
// One warp per row, no shared memory.  Lane l owns experts l, l + warpSize, ... and
// keeps their c and s in registers (kPerLane slots, fully unrolled, so no dynamic
// register indexing and no scratch).  Each of the k rounds: every lane finds its best
// untaken (c desc, id asc), a butterfly of shuffles gives every lane the warp's best
// under that same total order, the owner marks it taken (NaN: a real c is never NaN)
// and lane r keeps rank r's id and s.  The total order makes the result independent of
// the warp size and of the lane layout.  Every lane then forms the sum in rank order
// (the same fp32 additions, gathered by shuffles), and lane r writes rank r.
#include <climits>

#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"
#include "topk.h"

namespace hy4 {
namespace {

// Experts per lane: E <= 512 at warp 32 (wave64 uses half the slots).
constexpr int kPerLane = static_cast<int>(TopkPlan::kMaxExperts) / 32;

HY4_DEVICE inline bool better(float c, int id, float oc, int oid) { return c > oc || (c == oc && id < oid); }

__global__ void topk_kernel(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
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
  const float taken = f32_from_bits(0x7fc00000u);
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
    float c_reg[kPerLane], s_reg[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int e = j * ws + lane;
      c_reg[j] = taken;  // slots past E never compete
      s_reg[j] = 0.0f;
      if (e < experts) {
        const float x = logits_bf16 ? bf16_to_f32(static_cast<const uint16_t*>(logits)[t * logits_stride + e])
                                    : static_cast<const float*>(logits)[t * logits_stride + e];
        const float sv = sigmoid_f32(x);
        const float cv = sv + bias[e];
        c_reg[j] = is_nan_f32(cv) ? neg_inf : cv;  // NaN chooses like -inf
        s_reg[j] = sv;
      }
    }
    int my_id = -1;   // rank `lane`'s expert (lanes < k)
    float my_s = 0.0f;
    for (int r = 0; r < k; ++r) {
      float best_c = neg_inf;
      int best_id = INT_MAX;  // sentinel: loses every tie against a real expert
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {
        const int e = j * ws + lane;
        if (!is_nan_f32(c_reg[j]) && better(c_reg[j], e, best_c, best_id)) {
          best_c = c_reg[j];
          best_id = e;
        }
      }
      for (int m = ws / 2; m > 0; m /= 2) {
        const float oc = dev::shfl_xor(best_c, m);
        const int oid = dev::shfl_xor(best_id, m);
        if (better(oc, oid, best_c, best_id)) {
          best_c = oc;
          best_id = oid;
        }
      }
      const int owner = best_id % ws;
      float s_sel = 0.0f;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j)
        if (j * ws + lane == best_id) {
          s_sel = s_reg[j];
          c_reg[j] = taken;
        }
      s_sel = dev::shfl_idx(s_sel, owner);
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
      if (is_nan_f32(w)) w = taken;  // canonical NaN
      w_row[lane] = w;
      id_row[lane] = my_id;
    }
  }
}

}  // namespace

void TopkPlan::launch(hy4::rt::Stream stream) const {
  if (args_.logits.rows == 0) return;
  HY4_LAUNCH(topk_kernel, dim3(static_cast<unsigned>(grid_)), dim3(kBlockThreads), stream,
             static_cast<const void*>(args_.logits.data), args_.logits.dtype == DType::BF16 ? 1 : 0,
             args_.logits.row_stride, args_.bias, args_.logits.rows, static_cast<int>(args_.logits.cols), args_.k,
             args_.renormalize ? 1 : 0, args_.routed_scaling_factor, args_.num_rows,
             static_cast<float*>(args_.weights.data), args_.weights.row_stride, static_cast<int32_t*>(args_.ids.data),
             args_.ids.row_stride);
}

}  // namespace hy4
