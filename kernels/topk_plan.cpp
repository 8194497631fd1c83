// The topk op's plan: argument validation and launch shape (backend independent).
#include <algorithm>
#include <cmath>

#include "topk.h"

namespace hy4 {

TopkPlan::TopkPlan(const TopkArgs& a) : args_(a) {
  const char* op = "topk";
  const int64_t T = a.logits.rows, E = a.logits.cols;
  if (T < 0 || T > kMaxRows)
    check::fail(op, "argument 'logits' has " + std::to_string(T) + " rows; must be in [0, " + std::to_string(kMaxRows) + "]");
  if (a.logits.dtype != DType::F32 && a.logits.dtype != DType::BF16)
    check::fail(op, std::string("argument 'logits' has dtype ") + dtype_name(a.logits.dtype) + "; only fp32 and bf16 are supported");
  check::shape(op, "logits", a.logits, T, 1, kMaxExperts);
  if (a.k < 1 || a.k > std::min<int64_t>(E, kMaxK))
    check::fail(op, "argument 'k' is " + std::to_string(a.k) + "; must be in [1, min(E = " + std::to_string(E) +
                        ", " + std::to_string(kMaxK) + ")]");
  if (!std::isfinite(a.routed_scaling_factor))
    check::fail(op, "argument 'routed_scaling_factor' is not finite");
  check::dtype_is(op, "weights", a.weights, DType::F32);
  check::dtype_is(op, "ids", a.ids, DType::I32);
  check::shape(op, "weights", a.weights, T, a.k, a.k);
  check::shape(op, "ids", a.ids, T, a.k, a.k);
  check::stride(op, "logits", a.logits, kMaxStride);
  check::stride(op, "weights", a.weights, kMaxStride);
  check::stride(op, "ids", a.ids, kMaxStride);
  check::pointer(op, "logits", a.logits, dtype_size(a.logits.dtype));
  check::pointer(op, "weights", a.weights, 4);
  check::pointer(op, "ids", a.ids, 4);
  if (T > 0 && a.bias == nullptr) check::fail(op, "argument 'bias' is a null pointer");
  if (reinterpret_cast<uintptr_t>(a.bias) % 4 != 0) check::fail(op, "argument 'bias' is not aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(a.num_rows) % 4 != 0)
    check::fail(op, "argument 'num_rows' is not aligned to 4 bytes");
  check::no_partial_overlap(op, "weights", a.weights, "logits", a.logits);
  check::no_partial_overlap(op, "ids", a.ids, "logits", a.logits);
  check::no_partial_overlap(op, "ids", a.ids, "weights", a.weights);
  if (a.path != TopkPath::Auto && a.path != TopkPath::WarpPerRow && a.path != TopkPath::BlockPerRow)
    check::fail(op, "argument 'path' is " + std::to_string(static_cast<int>(a.path)) + "; must be 0 (auto), 1 (warp per row) or 2 (block per row)");
  block_per_row_ = a.path == TopkPath::BlockPerRow || (a.path == TopkPath::Auto && T <= kBlockPerRowMaxRows);
  // The warp path's grid depends on the launch's warp size: warp_path_grid, at launch.
  row_block_grid_ = std::min<int64_t>(T, kMaxGrid);
}

}  // namespace hy4
