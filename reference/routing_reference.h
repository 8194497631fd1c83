// CPU references of the routing op (SPEC section 4).
//   routing_bit_model:  the layout routing.h promises, built expert by expert
//                       (bucket per expert, tokens and slots in order).
//   routing_by_sort:    an independent construction: every valid entry keyed by
//                       (local expert, token, slot), stably sorted (Eigen arrays hold
//                       the keys), then laid out with the padding.
// Both write whole outputs; the harness compares them with each other and the kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace hy4::ref {

struct RoutingInput {
  const int32_t* ids = nullptr;  // [T, k] at ids_stride
  int64_t ids_stride = 0;
  const float* weights = nullptr;  // [T, k] at weights_stride
  int64_t weights_stride = 0;
  int64_t T = 0;
  int k = 1, E = 1, block_size = 1;
  const int32_t* mask = nullptr;  // [E] or null
  int64_t real_rows = 0;          // already clamped to [0, T]
};

struct RoutingResult {
  std::vector<int32_t> sorted_ids;      // [max_padded]
  std::vector<float> sorted_weights;    // [max_padded]
  std::vector<int32_t> expert_of_block; // [num_blocks]
  int32_t counts[2] = {0, 0};
};

RoutingResult routing_bit_model(const RoutingInput& in);
RoutingResult routing_by_sort(const RoutingInput& in);

}  // namespace hy4::ref
