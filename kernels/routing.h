// routing: MoE token sorting into contiguous block-aligned buffers (SPEC section 4,
// AITER moe_sorting layout).
//
// For every valid (token t, slot s) (t below the device row count, ids[t, s] in [0, E)
// and not masked), entry (s << 24) | t with weight weights[t, s] goes to the segment of
// its (local) expert; each expert's entries are in ascending (t, s) order and its
// segment is padded to a multiple of block_size; experts follow in ascending local id;
// experts with no entries get no block.
//   max_padded        = T*k + E*block_size - k slots (E = the global expert count)
//   sorted_ids        [max_padded]: entries; padding and the unused tail (k << 24) | T
//   sorted_weights    [max_padded]: weights; padding and tail +0
//   expert_of_block   [ceil(max_padded / block_size)]: local expert of each block, -1 past the used ones
//   counts            [2]: slots used after padding, real tokens
//   moe_out           optional [T, hidden] bf16, zero-filled by the same launch (every row)
// Choices written down here (SPEC is silent):
// - The expert mask (expert parallelism) is int32 [E], nonzero = this rank's expert;
//   local id = the number of unmasked experts below it.  Without a mask local = global.
// - The device row count is clamped to [0, T]; without one every row is real.
// - Weights are copied bit for bit (a NaN weight stays the NaN it was).
// - The same (t) may name one expert in several slots: each is an entry.
// - Deterministic: positions come from counts and prefix sums only (no atomics, no
//   order that depends on scheduling), so results are bitwise comparable everywhere.
#pragma once

#include "op_common.h"
#include "platform/runtime.h"

namespace hy4 {

struct RoutingArgs {
  MatrixView ids;                      // [T, k] int32, row-strided
  MatrixView weights;                  // [T, k] fp32, row-strided
  int experts = 256;                   // E
  int block_size = 64;                 // power of two
  const int32_t* expert_mask = nullptr;  // optional [E] (device)
  const int32_t* num_rows = nullptr;   // optional device row count
  int32_t* sorted_ids = nullptr;       // [max_padded]
  float* sorted_weights = nullptr;     // [max_padded]
  int32_t* expert_of_block = nullptr;  // [ceil(max_padded / block_size)]
  int32_t* counts = nullptr;           // [2]
  int64_t sorted_capacity = 0;         // elements behind sorted_ids and sorted_weights
  int64_t block_capacity = 0;          // elements behind expert_of_block
  MatrixView moe_out;                  // optional [T, hidden] bf16 (data null: no zero-fill)
  int32_t* workspace = nullptr;        // RoutingPlan::workspace_elems(T, E) int32 of device scratch
  int64_t workspace_capacity = 0;
};

class RoutingPlan {
 public:
  static constexpr int64_t kMaxTokens = (int64_t{1} << 24) - 1;  // a token must fit 24 bits
  static constexpr int kMaxExperts = 512;
  static constexpr int kMaxK = 32;
  static constexpr int kMaxBlockSize = 1024;
  static constexpr int64_t kMaxStride = int64_t{1} << 24;
  static constexpr int64_t kMaxHidden = int64_t{1} << 20;
  static constexpr int kChunkTokens = 64;   // tokens per chunk until the chunk cap
  static constexpr int kMaxChunks = 128;    // chunk cap: more tokens make chunks longer
  static constexpr int kExpertsPerWarp = 4; // experts a warp compares each entry with
  static constexpr int kThreads = 64;       // count / scatter blocks: one wave64 or two warps of 32
  static constexpr int kScanThreads = 512;  // the one offsets block at most: one expert per thread
  // The offsets block's size: the power of two >= experts, at least 64 (a full wave64).
  static constexpr int scan_threads(int experts) {
    int n = 64;
    while (n < experts && n < kScanThreads) n *= 2;
    return n;
  }

  static int64_t max_padded(int64_t T, int k, int E, int block_size) { return T * k + int64_t{E} * block_size - k; }
  static int64_t num_blocks(int64_t T, int k, int E, int block_size) {
    return (max_padded(T, k, E, block_size) + block_size - 1) / block_size;
  }
  static int chunks(int64_t T);
  // count[c][e], the start of chunk c inside expert e's segment, each segment's offset and total
  static int64_t workspace_elems(int64_t T, int E) { return 2 * int64_t{E} * chunks(T) + 2 * int64_t{E}; }

  explicit RoutingPlan(const RoutingArgs& args);  // throws ArgumentError naming the argument
  void launch(hy4::rt::Stream stream) const;
  const RoutingArgs& args() const { return args_; }
  int chunk_count() const { return chunks_; }

 private:
  RoutingArgs args_;
  int chunks_ = 1;
};

}  // namespace hy4
