// numeric_probe.hip: the shared fp32 transcendentals evaluated on the device.
// Also the empty kernel hy4-bench times as the cost of one graph node.
// AMD budget: numeric_probe_kernel >= 1 waves/SIMD   (a test kernel: any occupancy)
// AMD budget: empty_kernel >= 1 waves/SIMD
#include "numeric_probe.h"
#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"

namespace hy4 {
namespace {
__global__ void numeric_probe_kernel(uint32_t first, uint32_t stride, uint32_t count, uint32_t* out_exp,
                                     uint32_t* out_log, uint32_t* out_sigmoid, uint32_t* out_fast) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    const float x = f32_from_bits(first + i * stride);
    out_exp[i] = f32_bits(exp_f32(x));
    out_log[i] = f32_bits(log_f32(x));
    out_sigmoid[i] = f32_bits(sigmoid_f32(x));
    out_fast[i] = f32_bits(dev::fast_sigmoid(x));
    if (i > 0xFFFFFFFFu - step) break;  // no wrap-around of i
  }
}
__global__ void empty_kernel(int unused) { (void)unused; }
}  // namespace

void empty_kernel_launch(hy4::rt::Stream stream) { HY4_LAUNCH(empty_kernel, dim3(1), dim3(64), stream, 0); }

void numeric_probe_launch(uint32_t first, uint32_t stride, uint32_t count, uint32_t* out_exp, uint32_t* out_log,
                          uint32_t* out_sigmoid, uint32_t* out_fast, hy4::rt::Stream stream) {
  if (count == 0) return;
  HY4_LAUNCH(numeric_probe_kernel, dim3(1024), dim3(256), stream, first, stride, count, out_exp, out_log,
             out_sigmoid, out_fast);
}
}  // namespace hy4
