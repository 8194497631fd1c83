// routing.hip: the MoE token sort (see routing.h for the contract), one source for
// HIP, CUDA and the CPU executor.
//
// Design: three kernels, no atomics, every position from counts and prefix sums.
//  1. routing_count_kernel, grid (E / 4, C chunks) of 64 threads: a warp owns four
//     experts and one chunk of consecutive tokens, walks its (t, s) entries warpSize x 4
//     at a time (the four loads in flight together) and counts ids == e with ballots;
//     writes count[c][e].  The same blocks zero-fill moe_out's rows (grid-stride).
//  2. routing_offsets_kernel, one block of RoutingPlan::scan_threads(E) threads (the
//     power of two >= E, at least 64, at most 512; E <= 64 scans 6 steps, not 9), thread = expert: each chunk's
//     start inside the expert's segment and the total (one pass over c), the padded size, block scans of the padded sizes and of the unmasked flags (segment
//     offsets and local ids), counts, expert_of_block and the unused tail.  (Each
//     expert's padding was written here too, thread by thread: uncoalesced stores from
//     one SM took ~35 us at T = 64 on the H200; chunk 0's warps of 3 write it now.)
//  3. routing_scatter_kernel, grid as in 1: the warp of (experts, c) walks its chunk again
//     and writes each match at its start plus the ballot's prefix popcount, so entries
//     land in ascending (t, s) order whatever the warp size or the block order.
// Chunks: kChunkTokens tokens each up to the cap RoutingPlan::kMaxChunks; past kMaxChunks * kChunkTokens
// tokens a chunk grows (its warp loops longer).  Bounded by the E x T*k id reads of 1
// and 3 (L2-resident: ids are 4*T*k bytes).
// AMD budget: the count and scatter walks keep 4 loads in flight per lane and need 4
// waves per SIMD; the offsets kernel is one block, its occupancy is irrelevant (1).
// AMD budget: routing_count_kernel >= 4 waves/SIMD
// AMD budget: routing_scatter_kernel >= 4 waves/SIMD
// AMD budget: routing_offsets_kernel >= 1 waves/SIMD
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

// A warp's walk over the (t, s) entries of one chunk: kUnroll loads per lane are in
// flight before their ballots (a load-ballot chain per entry group was latency bound),
// and each entry is compared with the warp's kExperts experts (those past E or masked
// match nothing).  Slots past the chunk read -1, which is no expert.  j is the entry index inside the chunk (fits 32 bits).
constexpr int kUnroll = 4;
constexpr int kExperts = RoutingPlan::kExpertsPerWarp;

HY4_DEVICE inline int32_t chunk_id(const int32_t* ids, int64_t ids_stride, int64_t t0, int k, uint32_t j,
                                   uint32_t n) {
  if (j >= n) return -1;
  const uint32_t dt = j / static_cast<uint32_t>(k);
  return ids[(t0 + dt) * ids_stride + (j - dt * static_cast<uint32_t>(k))];
}

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kThreads)
    routing_count_kernel(const int32_t* ids, int64_t ids_stride, int64_t rows, int k, int experts,
                         const int32_t* mask, const int32_t* num_rows, int64_t chunk_tokens, int32_t* counts_ce,
                         uint16_t* moe_out, int64_t moe_stride, int64_t hidden) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warps = static_cast<int>(blockDim.x) / ws;
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int c = static_cast<int>(blockIdx.y);
  const int64_t real = real_rows_of(num_rows, rows);
  const int64_t t0 = c * chunk_tokens;
  const int64_t t1 = t0 + chunk_tokens < real ? t0 + chunk_tokens : real;
  const uint32_t n = t1 > t0 ? static_cast<uint32_t>((t1 - t0) * k) : 0;
  for (int e0 = (static_cast<int>(blockIdx.x) * warps + warp) * kExperts; e0 < experts;
       e0 += static_cast<int>(gridDim.x) * warps * kExperts) {
    bool live[kExperts];  // past E or masked: counts nothing (every int32 is some id)
    int count[kExperts];
#pragma unroll
    for (int x = 0; x < kExperts; ++x) {
      const int e = e0 + x;
      live[x] = e < experts && !expert_masked(mask, e);
      count[x] = 0;
    }
    for (uint32_t base = 0; base < n; base += static_cast<uint32_t>(ws * kUnroll)) {
      int32_t v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = chunk_id(ids, ids_stride, t0, k, base + u * ws + lane, n);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int x = 0; x < kExperts; ++x) count[x] += __builtin_popcountll(dev::ballot(live[x] && v[u] == e0 + x));
    }
    if (lane < kExperts && e0 + lane < experts) {
      int mine = 0;
#pragma unroll
      for (int x = 0; x < kExperts; ++x) mine = lane == x ? count[x] : mine;
      counts_ce[static_cast<int64_t>(c) * experts + e0 + lane] = mine;
    }
  }
  if (moe_out) {
    const int64_t b = static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    const int64_t nb = static_cast<int64_t>(gridDim.x) * gridDim.y;
    for (int64_t t = b; t < rows; t += nb)
      for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) moe_out[t * moe_stride + j] = 0;
  }
}

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kScanThreads)
    routing_offsets_kernel(const int32_t* counts_ce, int32_t* rel_ce, int32_t* offset_e, int32_t* total_e, int64_t rows, int k,
                           int experts, int block_size, const int32_t* mask, const int32_t* num_rows, int chunks,
                           int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block, int32_t* counts,
                           int64_t max_padded, int64_t num_blocks) {
  HY4_SHARED(int32_t, scan_pad, RoutingPlan::kScanThreads);
  HY4_SHARED(int32_t, scan_local, RoutingPlan::kScanThreads);
  const int e = static_cast<int>(threadIdx.x);
  int32_t total = 0;
  const bool mine = e < experts && !expert_masked(mask, e);
  if (e < experts)  // chunk c's start inside the expert's segment, and the total
#pragma unroll 8
    for (int c = 0; c < chunks; ++c) {
      const int64_t at = static_cast<int64_t>(c) * experts + e;
      const int32_t n = counts_ce[at];
      rel_ce[at] = total;
      total += n;
    }
  const int32_t padded = (total + block_size - 1) / block_size * block_size;
  scan_pad[e] = padded;
  scan_local[e] = mine ? 1 : 0;
  dev::sync_block();
  const int nt = static_cast<int>(blockDim.x);  // a power of two >= experts
  for (int d = 1; d < nt; d *= 2) {  // inclusive Hillis-Steele scans
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
  const int32_t used = scan_pad[nt - 1];
  const int32_t pad_id = (k << 24) | static_cast<int32_t>(rows);
  if (e < experts) {
    offset_e[e] = offset;
    total_e[e] = total;  // the scatter kernel writes the padding (coalesced, on every SM)
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
                           int64_t chunk_tokens, const int32_t* rel_ce, const int32_t* offset_e,
                           const int32_t* total_e, int block_size, int32_t* sorted_ids, float* sorted_weights) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warps = static_cast<int>(blockDim.x) / ws;
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int c = static_cast<int>(blockIdx.y);
  const int64_t real = real_rows_of(num_rows, rows);
  const int64_t t0 = c * chunk_tokens;
  const int64_t t1 = t0 + chunk_tokens < real ? t0 + chunk_tokens : real;
  const uint32_t n = t1 > t0 ? static_cast<uint32_t>((t1 - t0) * k) : 0;
  const uint64_t below = (uint64_t{1} << lane) - 1;  // lanes below mine (lane < 64)
  for (int e0 = (static_cast<int>(blockIdx.x) * warps + warp) * kExperts; e0 < experts;
       e0 += static_cast<int>(gridDim.x) * warps * kExperts) {
    bool live[kExperts];
    int64_t pos[kExperts];
#pragma unroll
    for (int x = 0; x < kExperts; ++x) {
      const int e = e0 + x;
      live[x] = e < experts && !expert_masked(mask, e);
      pos[x] = live[x] ? static_cast<int64_t>(offset_e[e]) + rel_ce[static_cast<int64_t>(c) * experts + e] : 0;
      if (c == 0 && live[x]) {  // chunk 0's warp writes the expert's padding, lane-strided
        const int32_t begin = offset_e[e] + total_e[e];
        const int32_t end = offset_e[e] + (total_e[e] + block_size - 1) / block_size * block_size;
        const int32_t pad_id = (k << 24) | static_cast<int32_t>(rows);
        for (int32_t j = begin + lane; j < end; j += ws) {
          sorted_ids[j] = pad_id;
          sorted_weights[j] = 0.0f;
        }
      }
    }
    for (uint32_t base = 0; base < n; base += static_cast<uint32_t>(ws * kUnroll)) {
      int32_t v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = chunk_id(ids, ids_stride, t0, k, base + u * ws + lane, n);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint32_t j = base + u * ws + lane;
#pragma unroll
        for (int x = 0; x < kExperts; ++x) {
          const bool match = live[x] && v[u] == e0 + x;
          const uint64_t m = dev::ballot(match);
          if (match) {
            const uint32_t dt = j / static_cast<uint32_t>(k);
            const int64_t t = t0 + dt;
            const int s = static_cast<int>(j - dt * static_cast<uint32_t>(k));
            const int64_t at = pos[x] + __builtin_popcountll(m & below);
            sorted_ids[at] = (s << 24) | static_cast<int32_t>(t);
            sorted_weights[at] = weights[t * weights_stride + s];
          }
          pos[x] += __builtin_popcountll(m);
        }
      }
    }
  }
}

}  // namespace

void RoutingPlan::launch(hy4::rt::Stream stream) const {
  const RoutingArgs& a = args_;
  const int64_t T = a.ids.rows;
  const int k = static_cast<int>(a.ids.cols), E = a.experts, C = chunks_;
  const int64_t chunk_tokens = (T + C - 1) / C > 0 ? (T + C - 1) / C : 1;
  int32_t* counts_ce = a.workspace;
  int32_t* rel_ce = a.workspace + int64_t{E} * C;
  int32_t* offset_e = a.workspace + 2 * int64_t{E} * C;
  int32_t* total_e = offset_e + E;
  // x: enough blocks for one warp per kExpertsPerWarp experts at wave64 (warp 32 leaves half idle)
  const dim3 grid(static_cast<unsigned>((E + kExpertsPerWarp - 1) / kExpertsPerWarp), static_cast<unsigned>(C));
  HY4_LAUNCH(routing_count_kernel, grid, dim3(kThreads), stream, static_cast<const int32_t*>(a.ids.data),
             a.ids.row_stride, T, k, E, a.expert_mask, a.num_rows, chunk_tokens, counts_ce,
             static_cast<uint16_t*>(a.moe_out.data), a.moe_out.row_stride, a.moe_out.data ? a.moe_out.cols : 0);
  HY4_LAUNCH(routing_offsets_kernel, dim3(1), dim3(static_cast<unsigned>(scan_threads(E))), stream, static_cast<const int32_t*>(counts_ce),
             rel_ce, offset_e, total_e, T, k, E, a.block_size, a.expert_mask, a.num_rows, C, a.sorted_ids, a.sorted_weights,
             a.expert_of_block, a.counts, max_padded(T, k, E, a.block_size), num_blocks(T, k, E, a.block_size));
  HY4_LAUNCH(routing_scatter_kernel, grid, dim3(kThreads), stream, static_cast<const int32_t*>(a.ids.data),
             a.ids.row_stride, static_cast<const float*>(a.weights.data), a.weights.row_stride, T, k, E,
             a.expert_mask, a.num_rows, chunk_tokens, static_cast<const int32_t*>(rel_ce),
             static_cast<const int32_t*>(offset_e), static_cast<const int32_t*>(total_e), a.block_size, a.sorted_ids,
             a.sorted_weights);
}

}  // namespace hy4
