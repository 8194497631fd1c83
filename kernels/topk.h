// topk: biased sigmoid top-k router, one expert group (SPEC section 3).
//
//   s[e] = sigmoid_f32(float(x[e]))        unbiased score
//   c[e] = s[e] + bias[e]                  choice score; NaN counts as -inf
//   the k largest c, ties to the LOWER expert id, in rank order (largest c first)
//   sum   = s[r0] + s[r1] + ...            fp32, in rank order
//   scale = renormalize ? rsf / max(sum, 1e-20f) : rsf
//   weights[r] = s[r] * scale              (the bias chooses, it never weighs)
//
// Choices written down here (SPEC is silent):
// - max(sum, 1e-20f) is `sum < 1e-20f ? 1e-20f : sum`: a NaN sum (a NaN logit was
//   selected) stays NaN, so the fault shows in every weight of the row instead of
//   being swallowed by max().
// - Every NaN weight is the canonical 0x7FC00000 (hardware NaN payloads differ).
// - Rows at or past the device row count (num_rows, optional, clamped to [0, T]) get
//   ids -1 and weights +0.  Nothing outside [T, k] of either output is written.
#pragma once

#include "op_common.h"
#include "platform/runtime.h"

namespace hy4 {

// Which kernel runs a plan: the plan's choice from T (Auto), or one of the two pinned
// (tests and benchmarks cross-check both on the same cases).
enum class TopkPath { Auto = 0, WarpPerRow = 1, BlockPerRow = 2 };

struct TopkArgs {
  MatrixView logits;               // [T, E] fp32 or bf16, row-strided
  const float* bias = nullptr;     // [E] fp32 (device)
  int k = 8;
  bool renormalize = true;
  float routed_scaling_factor = 1.0f;
  const int32_t* num_rows = nullptr;  // optional device row count
  MatrixView weights;              // [T, k] fp32, own row stride
  MatrixView ids;                  // [T, k] int32, own row stride
  TopkPath path = TopkPath::Auto;
};

class TopkPlan {
 public:
  static constexpr int64_t kMaxRows = int64_t{1} << 24;
  static constexpr int64_t kMaxExperts = 512;
  static constexpr int kMaxK = 32;
  static constexpr int64_t kMaxStride = int64_t{1} << 24;
  static constexpr int kBlockThreads = 256;  // 8 warps of 32 or 4 wavefronts of 64: a warp per row
  static constexpr int64_t kMaxGrid = 65535;  // blocks; rows past grid x warps-per-block are reached by the grid-stride loop
  // Warp per row: experts per lane (the kernel instance), ceil(E / warp) rounded up to 4,
  // 8 or 16: 4 for E <= 128 at warp 32 and E <= 256 at wave64 (HY V4 on AMD), 8 for E <= 256
  // at warp 32 (HY V4 on NVIDIA).  Chosen at launch, from the warp size the launch runs with.
  static constexpr int slots_per_lane(int64_t experts, int warp) {
    return experts <= 4 * int64_t{warp} ? 4 : experts <= 8 * int64_t{warp} ? 8 : 16;
  }
  // Auto: a block per row at T <= kBlockPerRowMaxRows (decode: the row's chain is split
  // over E threads), a warp per row above (throughput).  H200, HY V4 (E = 256, k = 8), T =
  // 512: 5.28 us as 512 row blocks, 3.83 us on the warp path (64 blocks of 8 rows); the
  // bound was 1024 until then (2026-12-05, ci/variants.txt topk.warp-path-above-256-rows).
  static constexpr int64_t kBlockPerRowMaxRows = 256;
  // Warp per row: blocks of kBlockThreads, a row per warp (8 rows a block at warp 32, 4 at
  // wave64), at most kMaxGrid blocks.  Chosen at launch, from the warp size the launch runs
  // with; sized for wave64 at warp 32 too, half the blocks had no row (H100,
  // topk.warp-grid-by-warp-size: x0.98 at T = 512, x0.99 at 8192 and 32768).
  static constexpr int64_t warp_path_grid(int64_t rows, int warp) {
    const int64_t rows_per_block = kBlockThreads / warp;
    const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
    return blocks < kMaxGrid ? blocks : kMaxGrid;
  }
  // Block per row: threads = the power of two >= E, at least 64, at most 512.
  static constexpr int row_block_threads(int64_t experts) { return pow2_threads(experts, 64, 512); }
  bool block_per_row() const { return block_per_row_; }

  explicit TopkPlan(const TopkArgs& args);  // throws ArgumentError naming the argument
  void launch(hy4::rt::Stream stream) const;
  const TopkArgs& args() const { return args_; }

 private:
  TopkArgs args_;
  int64_t row_block_grid_ = 0;  // block per row: a block a row, at most kMaxGrid
  bool block_per_row_ = false;
};

}  // namespace hy4
