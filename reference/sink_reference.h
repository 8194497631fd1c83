// Eigen CPU references of the sink op (SPEC section 2).
//   sink_bit_model:  the exact fp32 sequence the kernel promises (bitwise), in place on
//                    host copies of the whole out and lse buffers.
//   sink_math:       the function in float64 (logaddexp, exp), unrounded.
#pragma once

#include <cstdint>

namespace hy4::ref {

struct SinkInput {
  int64_t T = 0, H = 0, D = 0;
  bool out_bf16 = true;
  int64_t out_ts = 0, out_hs = 0;  // out element (t, h, c) at out + t*out_ts + h*out_hs + c
  int64_t lse_ts = 0, lse_hs = 0;
  const float* sinks = nullptr;        // [H]
  const int32_t* kv_indptr = nullptr;  // [T + 1]
};

// out: bf16 bits (uint16_t*) or fp32 (float*) as in.out_bf16 says.
void sink_bit_model(const SinkInput& in, void* out, float* lse);

// Dense float64 results: out64 [T, H, D], lse64 [T, H]; active64 [T, H] (1 active, 0 empty).
void sink_math(const SinkInput& in, const void* out, const float* lse, double* out64, double* lse64,
               uint8_t* active64);

}  // namespace hy4::ref
