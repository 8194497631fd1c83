// numeric_probe: evaluates the shared fp32 exp / log / sigmoid (platform/hy4_numeric.h)
// on the device for inputs first, first + stride, ... so the suite can prove the
// device's bits equal the host's (SPEC "Rules": identical bits on every backend).
#pragma once

#include <cstdint>

#include "platform/runtime.h"

namespace hy4 {
// out_*[i] = bits of f(bits_as_float(first + i * stride)), i < count; out_fast: the
// platform's dev::fast_sigmoid (an estimate, held to its 2^-16 promise, not to bits).
void numeric_probe_launch(uint32_t first, uint32_t stride, uint32_t count, uint32_t* out_exp, uint32_t* out_log,
                          uint32_t* out_sigmoid, uint32_t* out_fast, hy4::rt::Stream stream);
// One block of 64 threads that does nothing: hy4-bench's measure of a graph node's cost.
void empty_kernel_launch(hy4::rt::Stream stream);
}  // namespace hy4
