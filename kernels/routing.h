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
// - Deterministic: positions come from counts and prefix sums only (no atomics but ORs of
//   distinct bits into a shared bitmap, which commute; no order that depends on scheduling),
//   so results are bitwise comparable everywhere.
#pragma once

#include <algorithm>

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
  // Launch shape (routing.hip's design block says why):
  static constexpr int64_t kSingleMaxEntries = 2048;  // T*k at most this: one kernel, every block ranks all entries
  static constexpr int kSlotsPerBlock = 1024;         // the sort kernel: a block per 1024 output slots ...
  static constexpr int kMaxFillBlocks = 128;          // ... at most 128 blocks (fill_blocks)
  static constexpr int kChunkTokens = 64;             // two kernels: a block per chunk of 64 tokens ...
  static constexpr int kMaxChunks = 64;               // ... at most 64 chunks: more tokens make chunks longer
  static constexpr int kMaxThreads = 512;             // threads per block: one expert per thread in the scans
  static constexpr int kMaxWarps = kMaxThreads / 32;  // per-warp histograms in shared memory
  // Threads per block: the power of two >= experts, at least 64 (a full wave64), at most
  // 512; with two kernels at least 256.
  static constexpr int scan_threads(int experts) { return pow2_threads(experts, 64, kMaxThreads); }
  static bool one_kernel(int64_t T, int k) { return T * k <= kSingleMaxEntries; }
  // T*k at most this and no expert mask: the one kernel's warp-only decode path (every
  // entry in a lane of one warp, at warp 32 and 64 alike; no histogram, no block scan;
  // routing.hip says how).  Above it the bitmap path (H100, T = 8: 2.30 us against 2.67 for
  // the decode kernel with two entries per lane, which it replaced).
  static constexpr int64_t kDecodeMaxEntries = 32;
  static bool decode_path(int64_t T, int k, bool masked) { return T * k <= kDecodeMaxEntries && !masked; }
  // T*k at most kBitmapMaxEntries, E at most kBitmapMaxExperts, not the decode path: the one
  // kernel's bitmap path (one entry per thread, a presence bitmap of entries per expert in
  // shared memory; routing.hip says how), in blocks of bitmap_threads(), fill_blocks() of them.
  static constexpr int64_t kBitmapMaxEntries = 512;
  static constexpr int kBitmapMaxExperts = 256;
  static bool bitmap_path(int64_t T, int k, int E, bool masked) {
    return T * k <= kBitmapMaxEntries && E <= kBitmapMaxExperts && !decode_path(T, k, masked);
  }
  // Two kernels with chunks of at most kBitmapMaxEntries entries and E <= kBitmapMaxExperts:
  // the sort kernel ranks its chunk from the same bitmap (routing_sort_bitmap_kernel).
  static bool sort_bitmap(int64_t T, int k, int E) {
    return !one_kernel(T, k) && chunk_tokens(T) * k <= kBitmapMaxEntries && E <= kBitmapMaxExperts;
  }
  // Entries per thread of the bitmap path: threads = the power of two >= E and >= T*k / 2
  // (HY V4's T = 64: 256 threads, 8 warps per barrier instead of 16).
  static constexpr int kBitmapEntriesPerThread = 2;
  static int bitmap_threads(int64_t T, int k, int E) {
    return std::max(scan_threads(E), pow2_threads((T * k + kBitmapEntriesPerThread - 1) / kBitmapEntriesPerThread, 64,
                                                  kMaxThreads));
  }
  // The decode kernel's blocks: block_threads() cut into blocks of at most kDecodeMaxThreads,
  // fill_blocks() times as many of them as the cut makes, so the grid's warps (which share
  // the padding) stay the same.  Each warp runs the whole ranking, issue-bound: with 256
  // threads two warps shared each SM sub-partition (H100, T = 8: 3.92 -> 3.36 us).
  static constexpr int kDecodeMaxThreads = 128;
  // A block of fewer threads than a wave64 would have no whole warp there (0 warps: the
  // padding loop's stride would be 0, a hang on the GPU and on the executor alike).
  static_assert(kDecodeMaxThreads >= 64, "the decode kernel's blocks hold whole wave64s");
  static_assert(kDecodeMaxEntries <= 32, "the decode kernel holds one entry per lane of a warp of 32 or 64");
  static int decode_threads(int64_t T, int k, int experts) {
    const int n = block_threads(T, k, experts);
    return n < kDecodeMaxThreads ? n : kDecodeMaxThreads;
  }
  static int decode_blocks(int64_t T, int k, int E, int block_size) {
    return fill_blocks(T, k, E, block_size) * (block_threads(T, k, E) / decode_threads(T, k, E));
  }
  static int block_threads(int64_t T, int k, int experts) {
    const int n = scan_threads(experts);
    return one_kernel(T, k) || n >= 256 ? n : 256;
  }
  static int fill_blocks(int64_t T, int k, int E, int block_size);  // blocks that share the padding
  // The sort kernel's grid: fill_blocks with one kernel; max(chunks, fill_blocks) with two.
  static int sort_blocks(int64_t T, int k, int E, int block_size);
  static int64_t max_padded(int64_t T, int k, int E, int block_size) { return T * k + int64_t{E} * block_size - k; }
  static int64_t num_blocks(int64_t T, int k, int E, int block_size) {
    return (max_padded(T, k, E, block_size) + block_size - 1) / block_size;
  }
  static int chunks(int64_t T);          // chunks of the two-kernel path
  static int64_t chunk_tokens(int64_t T);  // tokens per chunk
  // count[c][e] of the two-kernel path (the one-kernel path does not touch it)
  static int64_t workspace_elems(int64_t T, int E) { return int64_t{E} * chunks(T); }

  explicit RoutingPlan(const RoutingArgs& args);  // throws ArgumentError naming the argument
  void launch(hy4::rt::Stream stream) const;
  const RoutingArgs& args() const { return args_; }

 private:
  RoutingArgs args_;
  uint32_t k_magic_ = 0;  // small_div_magic(k): the decode, bitmap and chunk-bitmap kernels' j / k
};

}  // namespace hy4
