// Eigen CPU references of the topk op (SPEC section 3).
//   topk_bit_model:   the exact fp32 sequence the kernel promises (bitwise).
//   topk_math_scores: s and c in float64, for the properties float64 can promise
//                     (see harness/topk_harness.cpp: near a tie float64 may choose
//                     differently, so it bounds the choice and the weights instead).
#pragma once

#include <cstdint>

namespace hy4::ref {

struct TopkInput {
  const void* logits = nullptr;  // [T, E] fp32 or bf16 bits
  bool bf16 = false;
  int64_t logits_stride = 0;
  const float* bias = nullptr;  // [E]
  int64_t rows = 0;
  int experts = 0;
  int k = 0;
  bool renormalize = true;
  float rsf = 1.0f;
  int64_t real_rows = 0;  // rows at or past it: ids -1, weights +0
};

void topk_bit_model(const TopkInput& in, float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride);

// Dense [T, E]: s64 = 1 / (1 + exp(-x)), c64 = s64 + bias (NaN stays NaN here).
void topk_math_scores(const TopkInput& in, double* s64, double* c64);

}  // namespace hy4::ref
