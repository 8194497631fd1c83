// routing.hip: the MoE token sort (see routing.h for the contract), one source for
// HIP, CUDA and the CPU executor.
//
// Design: three kernels, no atomics, every position from counts and prefix sums.
//  1. routing_count_kernel, grid (E, C chunks) of 64 threads: a warp owns one expert e
//     and one chunk of consecutive tokens, walks its (t, s) entries warpSize at a time
//     and counts ids == e with a ballot; writes count[e][c].  The same blocks zero-fill
//     moe_out's rows (grid-stride over rows).
//  2. routing_offsets_kernel, one block of 512 threads, thread = expert: totals, the
//     padded size, block scans of the padded sizes and of the unmasked flags (segment
//     offsets and local ids), each chunk's start inside its expert's segment, counts,
//     expert_of_block, the padding and the unused tail.
//  3. routing_scatter_kernel, grid as in 1: the warp of (e, c) walks its chunk again
//     and writes each match at its start plus the ballot's prefix popcount, so entries
//     land in ascending (t, s) order whatever the warp size or the block order.
// Chunks: kChunkTokens tokens each up to the cap RoutingPlan::kMaxChunks; past kMaxChunks * kChunkTokens
// tokens a chunk grows (its warp loops longer).  Bounded by the E x T*k id reads of 1
// and 3 (L2-resident: ids are 4*T*k bytes).
#include "platform/hy4_platform.h"
#include "routing.h"

namespace hy4 {
namespace {

HY4_DEVICE inline int64_t real_rows_of(const int32_t* num_rows, int64_t rows) {
  if (!num_rows) return rows;
  const int32_t v = *num_rows;
  return v < 0 ? 0 : (v < rows ? v : rows);
}

HY4_DEVICE inline bool expert_masked(const int32_t* mask, int e) { return mask != nullptr && mask[e] == 0; }

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kThreads)
    routing_count_kernel(const int32_t* ids, int64_t ids_stride, int64_t rows, int k, int experts,
                         const int32_t* mask, const int32_t* num_rows, int64_t chunk_tokens, int chunks,
                         int32_t* counts_ec, uint16_t* moe_out, int64_t moe_stride, int64_t hidden) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warps = static_cast<int>(blockDim.x) / ws;
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int c = static_cast<int>(blockIdx.y);
  const int64_t real = real_rows_of(num_rows, rows);
  const int64_t t0 = c * chunk_tokens;
  const int64_t t1 = t0 + chunk_tokens < real ? t0 + chunk_tokens : real;
  for (int e = static_cast<int>(blockIdx.x) * warps + warp; e < experts; e += static_cast<int>(gridDim.x) * warps) {
    int count = 0;
    if (!expert_masked(mask, e)) {
      for (int64_t base = t0 * k; base < t1 * k; base += ws) {
        const int64_t i = base + lane;
        const bool match = i < t1 * k && ids[(i / k) * ids_stride + i % k] == e;
        count += __builtin_popcountll(dev::ballot(match));
      }
    }
    if (lane == 0) counts_ec[static_cast<int64_t>(e) * chunks + c] = count;
  }
  if (moe_out) {
    const int64_t b = static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    const int64_t nb = static_cast<int64_t>(gridDim.x) * gridDim.y;
    for (int64_t t = b; t < rows; t += nb)
      for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) moe_out[t * moe_stride + j] = 0;
  }
}

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kScanThreads)
    routing_offsets_kernel(const int32_t* counts_ec, int32_t* chunk_start, int64_t rows, int k, int experts,
                           int block_size, const int32_t* mask, const int32_t* num_rows, int chunks,
                           int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block, int32_t* counts,
                           int64_t max_padded, int64_t num_blocks) {
  HY4_SHARED(int32_t, scan_pad, RoutingPlan::kScanThreads);
  HY4_SHARED(int32_t, scan_local, RoutingPlan::kScanThreads);
  const int e = static_cast<int>(threadIdx.x);
  int32_t total = 0;
  const bool mine = e < experts && !expert_masked(mask, e);
  if (e < experts)
    for (int c = 0; c < chunks; ++c) total += counts_ec[static_cast<int64_t>(e) * chunks + c];
  const int32_t padded = (total + block_size - 1) / block_size * block_size;
  scan_pad[e] = padded;
  scan_local[e] = mine ? 1 : 0;
  dev::sync_block();
  for (int d = 1; d < RoutingPlan::kScanThreads; d *= 2) {  // inclusive Hillis-Steele scans
    int32_t p = scan_pad[e], l = scan_local[e];
    if (e >= d) {
      p += scan_pad[e - d];
      l += scan_local[e - d];
    }
    dev::sync_block();
    scan_pad[e] = p;
    scan_local[e] = l;
    dev::sync_block();
  }
  const int32_t offset = scan_pad[e] - padded;
  const int32_t local = scan_local[e] - (mine ? 1 : 0);
  const int32_t used = scan_pad[RoutingPlan::kScanThreads - 1];
  const int32_t pad_id = (k << 24) | static_cast<int32_t>(rows);
  if (e < experts) {
    int32_t start = offset;
    for (int c = 0; c < chunks; ++c) {
      chunk_start[static_cast<int64_t>(e) * chunks + c] = start;
      start += counts_ec[static_cast<int64_t>(e) * chunks + c];
    }
    for (int32_t j = offset + total; j < offset + padded; ++j) {  // this expert's padding
      sorted_ids[j] = pad_id;
      sorted_weights[j] = 0.0f;
    }
    for (int32_t b = offset / block_size; b < (offset + padded) / block_size; ++b) expert_of_block[b] = local;
  }
  for (int64_t j = used + e; j < max_padded; j += blockDim.x) {  // the unused tail
    sorted_ids[j] = pad_id;
    sorted_weights[j] = 0.0f;
  }
  for (int64_t b = used / block_size + e; b < num_blocks; b += blockDim.x) expert_of_block[b] = -1;
  if (e == 0) {
    counts[0] = used;
    counts[1] = static_cast<int32_t>(real_rows_of(num_rows, rows));
  }
}

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kThreads)
    routing_scatter_kernel(const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride,
                           int64_t rows, int k, int experts, const int32_t* mask, const int32_t* num_rows,
                           int64_t chunk_tokens, int chunks, const int32_t* chunk_start, int32_t* sorted_ids,
                           float* sorted_weights) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warps = static_cast<int>(blockDim.x) / ws;
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int c = static_cast<int>(blockIdx.y);
  const int64_t real = real_rows_of(num_rows, rows);
  const int64_t t0 = c * chunk_tokens;
  const int64_t t1 = t0 + chunk_tokens < real ? t0 + chunk_tokens : real;
  const uint64_t below = (uint64_t{1} << lane) - 1;  // lanes below mine (lane < 64)
  for (int e = static_cast<int>(blockIdx.x) * warps + warp; e < experts; e += static_cast<int>(gridDim.x) * warps) {
    if (expert_masked(mask, e)) continue;
    int64_t pos = chunk_start[static_cast<int64_t>(e) * chunks + c];
    for (int64_t base = t0 * k; base < t1 * k; base += ws) {
      const int64_t i = base + lane;
      const int64_t t = i / k;
      const int s = static_cast<int>(i % k);
      const bool match = i < t1 * k && ids[t * ids_stride + s] == e;
      const uint64_t m = dev::ballot(match);
      if (match) {
        const int64_t at = pos + __builtin_popcountll(m & below);
        sorted_ids[at] = (s << 24) | static_cast<int32_t>(t);
        sorted_weights[at] = weights[t * weights_stride + s];
      }
      pos += __builtin_popcountll(m);
    }
  }
}

}  // namespace

void RoutingPlan::launch(hy4::rt::Stream stream) const {
  const RoutingArgs& a = args_;
  const int64_t T = a.ids.rows;
  const int k = static_cast<int>(a.ids.cols), E = a.experts, C = chunks_;
  const int64_t chunk_tokens = (T + C - 1) / C > 0 ? (T + C - 1) / C : 1;
  int32_t* counts_ec = a.workspace;
  int32_t* chunk_start = a.workspace + int64_t{E} * C;
  const dim3 grid(static_cast<unsigned>(E), static_cast<unsigned>(C));
  HY4_LAUNCH(routing_count_kernel, grid, dim3(kThreads), stream, static_cast<const int32_t*>(a.ids.data),
             a.ids.row_stride, T, k, E, a.expert_mask, a.num_rows, chunk_tokens, C, counts_ec,
             static_cast<uint16_t*>(a.moe_out.data), a.moe_out.row_stride, a.moe_out.data ? a.moe_out.cols : 0);
  HY4_LAUNCH(routing_offsets_kernel, dim3(1), dim3(kScanThreads), stream, static_cast<const int32_t*>(counts_ec),
             chunk_start, T, k, E, a.block_size, a.expert_mask, a.num_rows, C, a.sorted_ids, a.sorted_weights,
             a.expert_of_block, a.counts, max_padded(T, k, E, a.block_size), num_blocks(T, k, E, a.block_size));
  HY4_LAUNCH(routing_scatter_kernel, grid, dim3(kThreads), stream, static_cast<const int32_t*>(a.ids.data),
             a.ids.row_stride, static_cast<const float*>(a.weights.data), a.weights.row_stride, T, k, E,
             a.expert_mask, a.num_rows, chunk_tokens, C, static_cast<const int32_t*>(chunk_start), a.sorted_ids,
             a.sorted_weights);
}

}  // namespace hy4
