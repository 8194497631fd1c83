// topk.hip: the biased sigmoid top-k router, one source for HIP, CUDA and the CPU
// executor (see topk.h for the contract).
//
// One warp per row.  Lane l owns experts l, l + warpSize, ...: it computes their s and
// c once into its own slice of shared memory (only lane l ever touches those slots,
// so no warp barrier is needed).  Each of the k rounds: every lane finds its best
// untaken (c desc, id asc), a butterfly of shuffles gives every lane the warp's best
// under the same total order, the owner marks it taken (NaN: a real c is never NaN)
// and broadcasts its s.  The total order makes the result independent of the warp
// size and of the lane layout.  Lane 0 then sums s in rank order and writes the row.
#include <climits>

#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"
#include "topk.h"

namespace hy4 {
namespace {

constexpr int kMaxWarps = TopkPlan::kBlockThreads / 32;
constexpr int kSlice = static_cast<int>(TopkPlan::kMaxExperts);

HY4_DEVICE inline bool better(float c, int id, float oc, int oid) { return c > oc || (c == oc && id < oid); }

__global__ void topk_kernel(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
                            int64_t rows, int experts, int k, int renormalize, float rsf, const int32_t* num_rows,
                            float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride) {
  HY4_SHARED(float, sh_c, kMaxWarps * kSlice);
  HY4_SHARED(float, sh_s, kMaxWarps * kSlice);
  HY4_SHARED(int, sh_rank_id, kMaxWarps * TopkPlan::kMaxK);
  HY4_SHARED(float, sh_rank_s, kMaxWarps * TopkPlan::kMaxK);
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  const int base = warp * kSlice;
  const int rbase = warp * TopkPlan::kMaxK;
  int64_t real_rows = rows;
  if (num_rows) {
    const int32_t v = *num_rows;
    real_rows = v < 0 ? 0 : (v < rows ? v : rows);
  }
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
    for (int e = lane; e < experts; e += ws) {
      const float x = logits_bf16 ? bf16_to_f32(static_cast<const uint16_t*>(logits)[t * logits_stride + e])
                                  : static_cast<const float*>(logits)[t * logits_stride + e];
      const float s = sigmoid_f32(x);
      float c = s + bias[e];
      if (is_nan_f32(c)) c = f32_from_bits(0xff800000u);  // NaN chooses like -inf
      sh_c[base + e] = c;
      sh_s[base + e] = s;
    }
    for (int r = 0; r < k; ++r) {
      float best_c = f32_from_bits(0xff800000u);
      int best_id = INT_MAX;  // sentinel: loses every tie against a real expert
      for (int e = lane; e < experts; e += ws) {
        const float c = sh_c[base + e];
        if (is_nan_f32(c)) continue;  // taken
        if (better(c, e, best_c, best_id)) {
          best_c = c;
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
      if (lane == owner) {
        s_sel = sh_s[base + best_id];
        sh_c[base + best_id] = taken;
      }
      s_sel = dev::shfl_idx(s_sel, owner);
      if (lane == 0) {
        sh_rank_id[rbase + r] = best_id;
        sh_rank_s[rbase + r] = s_sel;
      }
    }
    if (lane == 0) {
      float sum = sh_rank_s[rbase + 0];
      for (int r = 1; r < k; ++r) sum = sum + static_cast<float>(sh_rank_s[rbase + r]);
      float scale = rsf;
      if (renormalize) scale = rsf / (sum < 1e-20f ? 1e-20f : sum);
      for (int r = 0; r < k; ++r) {
        float w = static_cast<float>(sh_rank_s[rbase + r]) * scale;
        if (is_nan_f32(w)) w = f32_from_bits(0x7fc00000u);
        w_row[r] = w;
        id_row[r] = sh_rank_id[rbase + r];
      }
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
