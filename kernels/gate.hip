// gate.hip: the fused BF16 MLA output gate kernel, one source for HIP, CUDA and the
// CPU executor (see gate.h for the contract).
#include "gate.h"
#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"

namespace hy4 {
namespace {

HY4_DEVICE inline uint16_t gate_one(uint16_t a, uint16_t g) {
  const uint16_t s = bf16_from_f32(sigmoid_f32(bf16_to_f32(g)));  // bf16 rounding of the sigmoid
  return bf16_from_f32(bf16_to_f32(a) * bf16_to_f32(s));
}

using dev::Bf16x8;

// Rows are spread over blocks (grid-stride); inside a row, threads take 8-wide
// vectors for the aligned prefix (when the plan found every row start 16-byte
// aligned) and single elements for the tail.
__global__ void HY4_LAUNCH_BOUNDS(256) gate_kernel(const uint16_t* attn, int64_t attn_stride,
                            const uint16_t* gate, int64_t gate_stride, uint16_t* out,
                            int64_t out_stride, int64_t rows, int64_t width, int vector) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x) {
    const uint16_t* a = attn + t * attn_stride;
    const uint16_t* g = gate + t * gate_stride;
    uint16_t* o = out + t * out_stride;
    int64_t tail_begin = 0;
    if (vector) {
      const int64_t nvec = width / 8;
      for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) {
        const Bf16x8 av = reinterpret_cast<const Bf16x8*>(a)[i];
        const Bf16x8 gv = reinterpret_cast<const Bf16x8*>(g)[i];
        Bf16x8 ov;
#pragma unroll
        for (int j = 0; j < 8; ++j) ov.v[j] = gate_one(av.v[j], gv.v[j]);
        reinterpret_cast<Bf16x8*>(o)[i] = ov;
      }
      tail_begin = nvec * 8;
    }
    for (int64_t i = tail_begin + threadIdx.x; i < width; i += blockDim.x) o[i] = gate_one(a[i], g[i]);
  }
}

}  // namespace

void GatePlan::launch(hy4::rt::Stream stream) const {
  if (args_.attn.rows == 0) return;
  HY4_LAUNCH(gate_kernel, dim3(static_cast<unsigned>(grid_)), dim3(static_cast<unsigned>(block_)), stream,
             static_cast<const uint16_t*>(args_.attn.data), args_.attn.row_stride,
             static_cast<const uint16_t*>(args_.gate.data), args_.gate.row_stride,
             static_cast<uint16_t*>(args_.out.data), args_.out.row_stride, args_.attn.rows, args_.attn.cols,
             vector_ ? 1 : 0);
}

}  // namespace hy4
