// Eigen CPU references of the gate op (SPEC section 1).
//   gate_bit_model:  the exact fp32 operation sequence the kernel promises (bitwise).
//   gate_math:       the function in float64, rounded once to bf16 at the end.
#pragma once

#include <cstdint>

namespace hy4::ref {

// Strided bf16 matrices (raw bits), rows x width; only [0, width) of each row is written.
void gate_bit_model(const uint16_t* attn, int64_t attn_stride, const uint16_t* gate, int64_t gate_stride,
                    uint16_t* out, int64_t out_stride, int64_t rows, int64_t width);

// out (float64, unrounded) = attn * sigmoid(gate) in float64, rows x width, dense.
void gate_math(const uint16_t* attn, int64_t attn_stride, const uint16_t* gate, int64_t gate_stride, double* out,
               int64_t rows, int64_t width);

}  // namespace hy4::ref
