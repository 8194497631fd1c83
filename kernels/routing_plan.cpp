// The routing op's plan: argument validation and launch shape (backend independent).
#include <algorithm>

#include "routing.h"

namespace hy4 {

int RoutingPlan::chunks(int64_t T) {
  return static_cast<int>(std::clamp<int64_t>((T + kChunkTokens - 1) / kChunkTokens, 1, kMaxChunks));
}

int64_t RoutingPlan::chunk_tokens(int64_t T) {
  const int C = chunks(T);
  return std::max<int64_t>(kChunkTokens, (T + C - 1) / C);
}

int RoutingPlan::fill_blocks(int64_t T, int k, int E, int block_size) {
  return static_cast<int>(std::clamp<int64_t>((max_padded(T, k, E, block_size) + kSlotsPerBlock - 1) / kSlotsPerBlock, 1,
                                              kMaxFillBlocks));
}

int RoutingPlan::sort_blocks(int64_t T, int k, int E, int block_size) {
  const int fill = fill_blocks(T, k, E, block_size);
  return one_kernel(T, k) ? fill : std::max(chunks(T), fill);
}

RoutingPlan::RoutingPlan(const RoutingArgs& a) : args_(a) {
  const char* op = "routing";
  const int64_t T = a.ids.rows;
  if (T < 0 || T > kMaxTokens)
    check::fail(op, "argument 'ids' has " + std::to_string(T) + " rows; must be in [0, " + std::to_string(kMaxTokens) + "]");
  check::dtype_is(op, "ids", a.ids, DType::I32);
  check::dtype_is(op, "weights", a.weights, DType::F32);
  check::shape(op, "ids", a.ids, T, 1, kMaxK);
  const int k = static_cast<int>(a.ids.cols);
  k_magic_ = small_div_magic(k);
  check::shape(op, "weights", a.weights, T, k, k);
  check::stride(op, "ids", a.ids, kMaxStride);
  check::stride(op, "weights", a.weights, kMaxStride);
  check::pointer(op, "ids", a.ids, 4);
  check::pointer(op, "weights", a.weights, 4);
  if (a.experts < 1 || a.experts > kMaxExperts)
    check::fail(op, "argument 'experts' is " + std::to_string(a.experts) + "; must be in [1, " + std::to_string(kMaxExperts) + "]");
  if (k > a.experts)
    check::fail(op, "argument 'ids' has k = " + std::to_string(k) + " columns, more than experts = " + std::to_string(a.experts));
  if (a.block_size < 1 || a.block_size > kMaxBlockSize || (a.block_size & (a.block_size - 1)) != 0)
    check::fail(op, "argument 'block_size' is " + std::to_string(a.block_size) + "; must be a power of two in [1, " +
                        std::to_string(kMaxBlockSize) + "]");
  const int64_t mp = max_padded(T, k, a.experts, a.block_size), nb = num_blocks(T, k, a.experts, a.block_size);
  auto out_ptr = [&](const char* name, const void* p) {
    if (p == nullptr) check::fail(op, std::string("argument '") + name + "' is a null pointer");
    if (reinterpret_cast<uintptr_t>(p) % 4 != 0) check::fail(op, std::string("argument '") + name + "' is not aligned to 4 bytes");
  };
  out_ptr("sorted_ids", a.sorted_ids);
  out_ptr("sorted_weights", a.sorted_weights);
  out_ptr("expert_of_block", a.expert_of_block);
  out_ptr("counts", a.counts);
  out_ptr("workspace", a.workspace);
  if (a.sorted_capacity < mp)
    check::fail(op, "argument 'sorted_capacity' is " + std::to_string(a.sorted_capacity) + "; sorted_ids and sorted_weights need max_padded = " + std::to_string(mp));
  if (a.block_capacity < nb)
    check::fail(op, "argument 'block_capacity' is " + std::to_string(a.block_capacity) + "; expert_of_block needs " + std::to_string(nb));
  if (a.workspace_capacity < workspace_elems(T, a.experts))
    check::fail(op, "argument 'workspace_capacity' is " + std::to_string(a.workspace_capacity) + "; the workspace needs " +
                        std::to_string(workspace_elems(T, a.experts)) + " int32");
  if (reinterpret_cast<uintptr_t>(a.expert_mask) % 4 != 0) check::fail(op, "argument 'expert_mask' is not aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(a.num_rows) % 4 != 0) check::fail(op, "argument 'num_rows' is not aligned to 4 bytes");
  if (a.moe_out.data != nullptr) {
    check::dtype_is(op, "moe_out", a.moe_out, DType::BF16);
    check::shape(op, "moe_out", a.moe_out, T, 1, kMaxHidden);
    check::stride(op, "moe_out", a.moe_out, kMaxStride);
    check::pointer(op, "moe_out", a.moe_out, 2);
  }
  // Outputs must not overlap each other (they are written by different kernels).
  struct Span { const char* name; uintptr_t b, e; };
  const Span spans[] = {
      {"sorted_ids", reinterpret_cast<uintptr_t>(a.sorted_ids), reinterpret_cast<uintptr_t>(a.sorted_ids + mp)},
      {"sorted_weights", reinterpret_cast<uintptr_t>(a.sorted_weights), reinterpret_cast<uintptr_t>(a.sorted_weights + mp)},
      {"expert_of_block", reinterpret_cast<uintptr_t>(a.expert_of_block), reinterpret_cast<uintptr_t>(a.expert_of_block + nb)},
      {"counts", reinterpret_cast<uintptr_t>(a.counts), reinterpret_cast<uintptr_t>(a.counts + 2)},
      {"workspace", reinterpret_cast<uintptr_t>(a.workspace), reinterpret_cast<uintptr_t>(a.workspace + workspace_elems(T, a.experts))}};
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j)
      if (spans[i].b < spans[j].e && spans[j].b < spans[i].e)
        check::fail(op, std::string("argument '") + spans[i].name + "' overlaps '" + spans[j].name + "'");
}

}  // namespace hy4
