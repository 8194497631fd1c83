// routing.hip: the MoE token sort (see routing.h for the contract), one source for
// HIP, CUDA and the CPU executor.
//
// Design: every position comes from counts and prefix sums (no atomics but the bitmap
// paths' ORs of distinct bits, which commute), and an entry's rank among the entries of its
// expert from ballots or from a presence bitmap, so results are the same bits
// whatever the warp size, the block order or the scheduling.  Work is O(T*k + E) per
// block, not O(E * T*k).
//  - A warp walks a contiguous run of entries j = t*k + s, warpSize at a time ((t, s)
//    stepped without a division).  Its lanes find the other lanes holding the same expert
//    with dev::match_by_ballots (one ballot per bit of expert + 1: E = 256 takes 9; CUDA's
//    MATCH.ANY was slower, routing.sort-matches-by-ballots); the lowest such lane is the
//    group's leader.
//    Counting: the leader adds the group's size to the warp's histogram row in shared
//    memory.  Ranking: the leader reads the row, broadcasts it, every lane adds the
//    group lanes below it, the leader adds the group size.  sync_warp between groups.
//  - A block splits its entries into one run per warp (in order), so an entry's place is:
//    its expert's segment offset + the entries of that expert in earlier chunks + in earlier
//    warps of the block + in earlier groups of the warp + in the group below its lane.
//  - Thread e of the block (blockDim = power of two >= E, 64 .. 512): the exclusive sums
//    over the rows of the warps that had entries (only those rows are zeroed and read),
//    the expert's total and padded size; one block scan (shuffles within warps, then the
//    warps' totals) of both padded sizes (-> segment ends) and unmasked flags (-> local
//    ids), packed in 64 bits.
//  - Every block also writes its share of the padding.  Two kernels: a warp per expert of
//    the block's share of the experts writes the slots past the expert's entries
//    ((k << 24) | T, +0) and the expert's expert_of_block entries, lanes striding
//    (coalesced); the block's share of the unused tail (slots past all used ones, blocks
//    -1) is thread-strided.  Entries and padding never share a slot, so no block waits for
//    another.  One kernel (every block, or every warp at decode, knows every entry's slot):
//    the owner of a part of the slots and blocks (prefill_part) writes all of it as unused
//    first thing, under the id reads' latency, and later, after a barrier, the entries and
//    used blocks that fall in its part over it; nothing is left for the end of the chain.
//    (H200, T = 1 / 8 / 64: 2.02 / 2.86 / 4.71 -> 1.66 / 2.61 / 4.29 us.)
// Two paths, chosen by the plan from T*k (not from the device row count, so a captured
// graph stays right for any count):
//  1. T*k <= kSingleMaxEntries (2048, decode): ONE kernel, routing_sort_kernel with no
//     count matrix.  Every block of fill_blocks() (a block per 1024 slots, at most 128:
//     16 at HY V4's E = 256, block 64, T = 1) ranks all entries itself (at most 2048, a few
//     groups per warp; the ids are 8 KiB of L2) and writes its part of the slots and blocks
//     (the prefill, then the entries and used blocks in it), so one graph node does all.
//     Decode (T*k <= kDecodeMaxEntries = 32, no expert mask): every entry fits a lane of
//     one warp, so each warp of each block does the whole ranking by itself, without the
//     histogram, the block scan or a barrier (decode_entries): lane l holds entry l; the
//     entries of the same expert (match_any, CUDA's MATCH.ANY) give an entry's rank (those
//     before it in j order, as on the other paths) and the expert's leader (rank 0) its
//     padded size; an entry's segment starts after the padded sizes of every smaller
//     expert that has entries (a walk over the lanes, shuffles).  Experts without entries
//     have empty segments, and without a mask an expert's local id is the expert, so
//     nothing needs the other E - 32 experts.  (Up to the twenty-fifth session the path
//     went to 64 entries, two per lane past warpSize, with ballots for the starts; the
//     bitmap kernel took T = 8 from 2.67 to 2.30 us there, H100, and the decode kernel
//     stays where it wins: T = 1 1.76 against the bitmap kernel's 2.30.)
//     Each warp of the grid owns a part of the slots and blocks (the prefill above, per
//     warp: a warp barrier orders it before the same warp's entries), so no warp writes
//     another's slot.  (Reading the device row count after the id reads, and finding an
//     entry's row by a multiply instead of a division ahead of them, were both slower:
//     docs/MEASUREMENTS.md, twenty-fourth session.)  It is its own kernel,
//     routing_decode_kernel (folded into routing_sort_kernel behind a flag, the sort
//     kernel's other shapes lost 0.15 - 0.2 us on the H200), in blocks of at most 128
//     threads (RoutingPlan::decode_blocks: the same warps as fill_blocks() blocks of
//     block_threads(), one per SM sub-partition, since every warp's ranking is
//     issue-bound; H100, T = 8: x0.86).
//     Bitmap path (RoutingPlan::bitmap_path: T*k <= kBitmapMaxEntries = 512, E <= 256, not
//     the decode path; HY V4's T = 5 .. 64): routing_bitmap_kernel instead of the sort
//     kernel, two entries per thread (RoutingPlan::kBitmapEntriesPerThread), the ranking
//     from a presence bitmap of the entries per expert in shared memory (its design is
//     written above it).
//  2. Otherwise TWO kernels over chunks of chunk_tokens(T) tokens (64 until the cap of 64
//     chunks, then longer): routing_count_kernel writes count[c][e] for its chunk (and
//     zero-fills moe_out rows); routing_sort_kernel (max(chunks, fill_blocks) blocks)
//     block c sums count[.][e] over all chunks (its expert's total) and over chunks below
//     c (its chunk's start), all reads in flight, then ranks and writes chunk c's entries
//     (blocks past the chunks rank nothing) and its share of the padding.  With chunks of
//     at most 512 entries and E <= 256 (RoutingPlan::sort_bitmap; HY V4's T = 257 .. 4096)
//     routing_sort_bitmap_kernel does the same, the chunk ranked from a presence bitmap.
//     The sort kernel is the count kernel's dependent launch (HY4_LAUNCH_DEPENDENT_IF;
//     CUDA: programmatic dependent launch): the count kernel lets it start at its top, and
//     the sort kernel reads its ids and counts its own chunk before dev::wait_prior_grid(),
//     which every thread calls just before the count-matrix reads.  Nothing the sort
//     kernel writes is read by the count kernel, and the count kernel follows the last
//     kernel as a plain launch, so the ids are complete when either reads them.  (H100,
//     T = 512 / 4096 / 8192: 8.62 -> 6.81, 9.22 -> 7.33, 13.06 -> 9.27 us; HIP has no
//     dependent launch: there the two kernels run one after the other.)
// The ids and weights are read before the device row count is known (every j < T*k is
// inside the views) and before the histogram rows are zeroed (count_block), four groups at
// a time (kGroupsAhead), so the row count, id and weight reads overlap each other and the
// zeroing's barrier; the sort kernel reads a warp's first four groups (its whole run
// at decode) once, weights with them, and finds their match masks once, for both the
// count and the ranking; every count-matrix read of a sort thread is in flight at once.
// Shares of the padding are made on the host (no 64-bit division on the device).
// Bounded by (H200, ncu): the dependent chain of a few hundred instructions per warp at
// 8 warps per SM (decode: ~800 issued per warp, ~8 cycles each), and at large T the
// count-matrix reads (C x E int32 per block) and the slot writes (8 bytes per slot).
// AMD budget: 40 KiB of LDS per block (16 warp rows x 512 experts + 4 x 512) allows two
// sort blocks per CU on gfx942 (2 waves/SIMD, LDS-bound); the kernels are latency bound,
// one wave per SIMD is their need.
// AMD budget: routing_count_kernel >= 1 waves/SIMD
// AMD budget: routing_sort_kernel >= 1 waves/SIMD
// AMD budget: routing_decode_kernel >= 1 waves/SIMD
#include <algorithm>

#include "platform/hy4_platform.h"
#include "op_device.h"
#include "routing.h"

namespace hy4 {
namespace {

HY4_DEVICE inline bool expert_masked(const int32_t* mask, int e) { return mask != nullptr && mask[e] == 0; }

// The sorted id of entry (t, s): slot s above bit 24, token t below (routing.h).  The
// padding's id is sorted_id(T, k): a token past every row, a slot past every slot.
HY4_DEVICE inline int32_t sorted_id(int64_t t, int64_t s) { return static_cast<int32_t>((s << 24) | t); }

// What a warp needs to read entry j = t*k + s (entries index below 2^29: T < 2^24, k <= 32).
struct EntryReader {
  const int32_t* ids;
  int64_t ids_stride;
  uint32_t k;
  int experts;
  const int32_t* mask;
  uint32_t n_real;  // real rows * k: entries past it are graph padding
  int bits;         // match_any bits: expert + 1 (-1 -> 0) is below 2^bits
  uint32_t k_magic = 0;  // small_div_magic(k) from the plan: read_entry's j / k (0 where unused)
  // The (global) expert of entry j = t*k + s, or -1: past `end`, padding, outside [0, E)
  // or masked.  The id is read whenever j < end (j < T*k: inside the view), so that the
  // read does not wait for the device row count.
  HY4_DEVICE int32_t raw_id(uint32_t j, uint32_t t, uint32_t s, uint32_t end) const {
    return j < end ? ids[static_cast<int64_t>(t) * ids_stride + s] : -1;
  }
  // Entry j = t0 * k + jl as t = t0 + jl / k, s = jl % k, its raw id and its weight (0 past
  // `end`): one entry per thread (the decode, bitmap and chunk-bitmap kernels; the warp loops
  // step an EntryCursor).  jl / k is small_div by k_magic, no device division (jl <
  // kSmallDivMaxDividend; the kernels' static_asserts hold the bound): the division was the
  // one thing before these loads that took tens of instructions (sm_90 SASS, twenty-ninth
  // session).
  HY4_DEVICE int32_t read_entry(uint32_t t0, uint32_t jl, uint32_t end, const float* weights, int64_t weights_stride,
                                uint32_t& t, uint32_t& s, float& wt) const {
    const uint32_t dt = small_div(jl, k_magic);
    t = t0 + dt;
    s = jl - dt * k;
    const uint32_t j = t0 * k + jl;
    wt = j < end ? weights[static_cast<int64_t>(t) * weights_stride + s] : 0.0f;
    return raw_id(j, t, s, end);
  }
  HY4_DEVICE int expert_of(uint32_t j, int32_t id) const {
    return j < n_real && id >= 0 && id < experts && !expert_masked(mask, id) ? id : -1;
  }
  // The valid lanes holding the same expert as mine (meaningless for e < 0): one ballot per
  // bit, not CUDA's MATCH.ANY (ncu, H100, T = 64: 16 % of the sort kernel's samples waited
  // on it, with up to 32 distinct experts in a warp; ballots x0.95 - 0.99 at T >= 64).
  HY4_DEVICE uint64_t same_expert_lanes(int e) const { return dev::match_by_ballots(static_cast<uint32_t>(e + 1), bits); }
};

// read_entry's jl: a lane (< 64), or tid + i * blockDim.x with i below 2 entries per thread
// (the bitmap kernels); its k at most kMaxK.
static_assert(RoutingPlan::kBitmapEntriesPerThread * RoutingPlan::kMaxThreads <= kSmallDivMaxDividend &&
                  RoutingPlan::kBitmapMaxEntries / 256 * RoutingPlan::kMaxThreads <= kSmallDivMaxDividend &&
                  RoutingPlan::kMaxK <= kSmallDivMaxDivisor,
              "read_entry's jl / k is inside small_div's bounds");

// A lane's entry j = base + lane as (t, s), advanced by warpSize entries per step without
// a division (dt = ws / k, ds = ws % k).
struct EntryCursor {
  uint32_t t, s, dt, ds, k;
  HY4_DEVICE EntryCursor(uint32_t j, uint32_t k_, uint32_t ws) : k(k_) {
    t = j / k;
    s = j - t * k;
    dt = ws / k;
    ds = ws - dt * k;
  }
  HY4_DEVICE void step() {
    t += dt;
    s += ds;
    if (s >= k) {
      s -= k;
      ++t;
    }
  }
};

// Warp w's run of the block's entries [r0, r1): a multiple of warpSize per warp, in order.
// Returns the warps whose run is not empty (the only histogram rows used).
HY4_DEVICE inline int warp_run(uint32_t r0, uint32_t r1, int warps, int warp, int ws, uint32_t& a, uint32_t& b) {
  const uint32_t len = r1 - r0, per_warp = (len + warps - 1) / warps;
  const uint32_t per = (per_warp + ws - 1) / ws * ws;
  const uint64_t a64 = r0 + static_cast<uint64_t>(per) * warp;
  a = a64 < r1 ? static_cast<uint32_t>(a64) : r1;
  b = a + per < r1 && a + per >= a ? a + per : r1;
  return len == 0 ? 0 : static_cast<int>((len + per - 1) / per);
}

// Part i of [0, total) cut into parts of `per`: [i * per, (i + 1) * per), clamped to total
// (a part past the end is empty).  Chunks of entries and the sort blocks' shares.
HY4_DEVICE inline void part_of(uint32_t total, uint64_t per, int i, uint32_t& begin, uint32_t& end) {
  const uint64_t b = static_cast<uint64_t>(i) * per, e = b + per;
  begin = b < total ? static_cast<uint32_t>(b) : total;
  end = e < total ? static_cast<uint32_t>(e) : total;
}

// Zero-fills moe_out's rows (grid-stride over the launch's blocks, threads over hidden).
HY4_DEVICE inline void zero_moe_rows(uint16_t* moe_out, int64_t moe_stride, int64_t rows, int64_t hidden) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x)
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) moe_out[t * moe_stride + j] = 0;
}

// Groups of warpSize entries whose reads (ids; weights when ranking) are issued together.
constexpr int kGroupsAhead = 4;

// kGroupsAhead groups of a warp's entries, read together: the lane's ids, weights (when
// ranking) and sorted ids.
struct EntryBatch {
  int32_t id[kGroupsAhead];
  float wt[kGroupsAhead];
  int32_t sid[kGroupsAhead];
  // The sort kernel's first batch: each group's match mask, found once by count_run and
  // used again by the ranking (H100, T = 64 / 512 / 4096: x0.95 / 0.96 / 0.93,
  // routing.sort-reuses-first-batch-masks).
  uint64_t same[kGroupsAhead];
  // Reads the groups from base (the cursor at base + lane, advanced past them); entries
  // j >= b read nothing (id -1).  weights == nullptr: the ids alone.
  HY4_DEVICE void read(const EntryReader& r, const float* weights, int64_t weights_stride, uint32_t base, uint32_t b,
                       EntryCursor& at) {
    const int ws = dev::warp_size(), lane = dev::lane_id();
#pragma unroll
    for (int u = 0; u < kGroupsAhead; ++u, at.step()) {
      const uint32_t j = base + u * ws + lane;
      id[u] = r.raw_id(j, at.t, at.s, b);
      wt[u] = weights != nullptr && j < b ? weights[static_cast<int64_t>(at.t) * weights_stride + at.s] : 0.0f;
      sid[u] = sorted_id(at.t, at.s);
    }
  }
};

// Counts the warp's run [a, b) into hist[row + e] (zeroed before).  first: the run's first
// batch, already read (by count_block, before the zeroing), `at` the cursor past it; the
// first batch's match masks are kept in it for the ranking.
template <class Shared>
HY4_DEVICE void count_run(const EntryReader& r, uint32_t a, uint32_t b, Shared hist, int row, EntryBatch& first,
                          EntryCursor& at) {
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  for (uint32_t base = a; base < b; base += static_cast<uint32_t>(ws * kGroupsAhead)) {
    EntryBatch batch;
    if (base == a)
      batch = first;
    else
      batch.read(r, nullptr, 0, base, b, at);
#pragma unroll
    for (int u = 0; u < kGroupsAhead; ++u) {
      if (base + u * ws >= b) break;  // warp-uniform
      const int e = r.expert_of(base + u * ws + lane, batch.id[u]);
      const uint64_t m = r.same_expert_lanes(e);
      if (base == a) first.same[u] = m;
      if (e >= 0 && lane == dev::lowest_lane(m)) hist[row + e] += __builtin_popcountll(m);
      dev::sync_warp();
    }
  }
}

// The block's count of its entries [r0, r1): one run per warp (its [a, b)), its first batch
// read (ids, and weights when given: kept in *first for the ranking) before the rows of the
// warps with entries are zeroed, so the reads fly across the zeroing and its barrier; then
// each warp's run counted into its row.  Returns the warps with entries (the rows in use).
// after_reads() runs right after the first batch's reads are issued.
struct NothingAfterReads {
  HY4_DEVICE void operator()() const {}
};
template <class Shared, class AfterReads = NothingAfterReads>
HY4_DEVICE int count_block(const EntryReader& r, uint32_t r0, uint32_t r1, Shared hist, uint32_t& a, uint32_t& b,
                           const float* weights = nullptr, int64_t weights_stride = 0, EntryBatch* first = nullptr,
                           AfterReads after_reads = AfterReads()) {
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int ws = dev::warp_size(), warp = tid / ws;
  const int active = warp_run(r0, r1, nt / ws, warp, ws, a, b);
  EntryBatch own;
  EntryBatch& batch = first != nullptr ? *first : own;
  EntryCursor at(a + static_cast<uint32_t>(dev::lane_id()), r.k, static_cast<uint32_t>(ws));
  batch.read(r, weights, weights_stride, a, b, at);
  after_reads();  // work that needs none of them (the one-kernel prefill), under their latency
  for (int i = tid; i < active * r.experts; i += nt) hist[i] = 0;
  dev::sync_block();
  count_run(r, a, b, hist, warp * r.experts, batch, at);
  dev::sync_block();
  return active;
}

__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kMaxThreads)
    routing_count_kernel(const int32_t* ids, int64_t ids_stride, int64_t rows, int k, int experts,
                         const int32_t* mask, const int32_t* num_rows, int64_t chunk_tokens, int bits,
                         int32_t* counts_ce, uint16_t* moe_out, int64_t moe_stride, int64_t hidden) {
  const int tid = static_cast<int>(threadIdx.x), warps = static_cast<int>(blockDim.x) / dev::warp_size();
  HY4_SHARED_UPTO(int32_t, hist, RoutingPlan::kMaxWarps * RoutingPlan::kMaxExperts, warps * experts);
  dev::launch_dependents();  // the sort kernel may start: it waits for this grid before its count-matrix reads
  const int c = static_cast<int>(blockIdx.x);
  const EntryReader r{ids, ids_stride, static_cast<uint32_t>(k), experts, mask,
                      static_cast<uint32_t>(device_row_count(num_rows, rows) * k), bits};
  uint32_t r0, r1, a, b;
  part_of(static_cast<uint32_t>(rows * k), static_cast<uint64_t>(chunk_tokens * k), c, r0, r1);
  const int active = count_block(r, r0, r1, hist, a, b);
  if (tid < experts) {
    int32_t total = 0;
    for (int w = 0; w < active; ++w) total += hist[w * experts + tid];
    counts_ce[static_cast<int64_t>(c) * experts + tid] = total;
  }
  if (moe_out) zero_moe_rows(moe_out, moe_stride, rows, hidden);
}

// Shares of the sort kernels' work, made on the host (no 64-bit divisions on the device):
// block b (the decode kernel: grid warp b) owns part b of each range (part_of).
struct SortShares {
  int32_t experts;  // two kernels: experts whose padding and expert_of_block entries it writes
  int32_t slots;    // slots of [0, max_padded): two kernels, the unused tail in it; one, all of it
  int32_t blocks;   // entries of expert_of_block: the same
};

// The warp's inclusive scan of v in lane order (log2(ws) shuffle steps; lanes below the
// step keep their value).  uint32_t for the bitmap path, uint64_t for the sort kernels.
template <class T>
HY4_DEVICE T warp_inclusive_scan(T v) {
  const int ws = dev::warp_size(), lane = dev::lane_id();
  for (int d = 1; d < ws; d *= 2) {
    const T y = dev::shfl_idx(v, lane >= d ? lane - d : lane);
    if (lane >= d) v += y;
  }
  return v;
}

// The block's inclusive scan of v in thread order (nt threads, one value each): warp
// scans by shuffles, then the totals of the warps below.  warp_total: kMaxWarps slots.
template <class Shared>
HY4_DEVICE uint64_t block_inclusive_scan(uint64_t v, Shared warp_total) {
  const int ws = dev::warp_size(), lane = dev::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / ws, warps = static_cast<int>(blockDim.x) / ws;
  v = warp_inclusive_scan(v);
  if (lane == ws - 1) warp_total[warp] = v;
  dev::sync_block();
  for (int w = 0; w < warps - 1; ++w) v += w < warp ? static_cast<uint64_t>(warp_total[w]) : 0;
  return v;
}

// block_size is a power of two (the plan refuses any other): divisions by it are shifts,
// roundings up to it masks (a division by a run-time int is ~20 instructions on CUDA).
HY4_DEVICE inline int32_t whole_blocks(int32_t slots, int block_size) {
  return slots >> dev::lowest_lane(static_cast<uint64_t>(block_size));
}
HY4_DEVICE inline int32_t padded_size(int32_t entries, int block_size) { return (entries + block_size - 1) & -block_size; }

// One warp pads an expert's segment [first, last) past its `entries` entries and writes
// the segment's expert_of_block entries (the expert's local id), lanes striding.
HY4_DEVICE inline void pad_segment(int32_t first, int32_t entries, int32_t last, int32_t local, int block_size,
                                   int32_t pad_id, int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block) {
  const int ws = dev::warp_size(), lane = dev::lane_id();
  for (int32_t p = first + entries + lane; p < last; p += ws) {
    sorted_ids[p] = pad_id;
    sorted_weights[p] = 0.0f;
  }
  for (int32_t q = whole_blocks(first, block_size) + lane; q < whole_blocks(last, block_size); q += ws)
    expert_of_block[q] = local;
}

// Block c's share of the unused tail (slots from `used` on, blocks from used / block_size
// on), and counts (block 0).  Both sort kernels end with it.
HY4_DEVICE inline void write_unused_tail(int c, int tid, int nt, int32_t used, int32_t pad_id, int block_size,
                                         SortShares share, int32_t max_padded, int32_t num_blocks, int64_t real,
                                         int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block,
                                         int32_t* counts) {
  // (slot and block indices fit 32 bits: max_padded < 2^24 * 32 + 512 * 1024)
  uint32_t p0, p1, q0, q1;
  part_of(static_cast<uint32_t>(max_padded), static_cast<uint32_t>(share.slots), c, p0, p1);
  for (int32_t p = (static_cast<int32_t>(p0) > used ? static_cast<int32_t>(p0) : used) + tid; p < static_cast<int32_t>(p1);
       p += nt) {
    sorted_ids[p] = pad_id;
    sorted_weights[p] = 0.0f;
  }
  const int32_t used_blocks = whole_blocks(used, block_size);
  part_of(static_cast<uint32_t>(num_blocks), static_cast<uint32_t>(share.blocks), c, q0, q1);
  for (int32_t q = (static_cast<int32_t>(q0) > used_blocks ? static_cast<int32_t>(q0) : used_blocks) + tid;
       q < static_cast<int32_t>(q1); q += nt)
    expert_of_block[q] = -1;
  if (c == 0 && tid == 0) {
    counts[0] = used;
    counts[1] = static_cast<int32_t>(real);
  }
}

// Part i of the slots [0, max_padded) and of expert_of_block [0, num_blocks), written as if
// nothing were used (slots (pad_id, +0), blocks -1), lanes (or threads: nt, id) striding.
// The one-kernel paths do it first thing: the values do not depend on the ranking, so the
// writes issue under the id reads' latency, and the part's owner later writes the entries
// and the used blocks that fall in it over them, after a barrier (the same threads' order).
HY4_DEVICE inline void prefill_part(int i, int nt, int id, int32_t pad_id, SortShares share, int32_t max_padded,
                                    int32_t num_blocks, int32_t* sorted_ids, float* sorted_weights,
                                    int32_t* expert_of_block, uint32_t& p0, uint32_t& p1, uint32_t& q0, uint32_t& q1) {
  part_of(static_cast<uint32_t>(max_padded), static_cast<uint32_t>(share.slots), i, p0, p1);
  part_of(static_cast<uint32_t>(num_blocks), static_cast<uint32_t>(share.blocks), i, q0, q1);
  for (uint32_t p = p0 + static_cast<uint32_t>(id); p < p1; p += static_cast<uint32_t>(nt)) {
    sorted_ids[p] = pad_id;
    sorted_weights[p] = 0.0f;
  }
  for (uint32_t q = q0 + static_cast<uint32_t>(id); q < q1; q += static_cast<uint32_t>(nt)) expert_of_block[q] = -1;
}

// The used blocks [first, last) of a segment (slots, multiples of block_size) that fall in
// [q0, q1) get the expert's local id.
HY4_DEVICE inline void write_segment_blocks(int32_t first, int32_t last, int32_t local, int block_size, uint32_t q0,
                                            uint32_t q1, int32_t* expert_of_block) {
  const int32_t b0 = whole_blocks(first, block_size), b1 = whole_blocks(last, block_size);
  for (int32_t q = b0 > static_cast<int32_t>(q0) ? b0 : static_cast<int32_t>(q0); q < b1 && q < static_cast<int32_t>(q1); ++q)
    expert_of_block[q] = local;
}

// The decode path's ranking (RoutingPlan::decode_path: n = T*k <= 32 entries, no mask),
// done by each calling warp alone: lane l holds entry j = l.  The warp first prefills its
// part of the slots and blocks (part gw of the grid's warps), and at the end writes the
// entries and used blocks that fall in it, and counts (the grid's warp 0).
//  - same: the lanes holding my entry's expert (match_any: CUDA's MATCH.ANY, else ballots).
//  - An entry's rank in its expert = its expert's entries below its lane (j order); rank 0
//    is the expert's leader, which holds its padded size.
//  - Its segment starts after the padded sizes of every smaller expert's leader (a walk over
//    the lanes that hold entries, shuffles).
HY4_DEVICE inline void decode_entries(const EntryReader& r, const float* weights, int64_t weights_stride, uint32_t n,
                                      int block_size, int32_t pad_id, SortShares share, int32_t max_padded,
                                      int32_t num_blocks, int64_t real, int32_t* sorted_ids, float* sorted_weights,
                                      int32_t* expert_of_block, int32_t* counts) {
  const int ws = dev::warp_size(), lane = dev::lane_id();
  const int warps = static_cast<int>(blockDim.x) / ws, warp = static_cast<int>(threadIdx.x) / ws;
  const int gw = static_cast<int>(blockIdx.x) * warps + warp;  // this warp's number in the grid
  const uint64_t below = (uint64_t{1} << lane) - 1;  // lane < 64
  const uint32_t j = static_cast<uint32_t>(lane);
  uint32_t t, s;
  float wt;
  const int32_t id = r.read_entry(0, j, n, weights, weights_stride, t, s, wt);
  // The warp's part of the slots and blocks, as if unused, while the reads are in flight.
  uint32_t p0, p1, q0, q1;
  prefill_part(gw, ws, lane, pad_id, share, max_padded, num_blocks, sorted_ids, sorted_weights, expert_of_block, p0,
               p1, q0, q1);
  const int x = r.expert_of(j, id);
  const uint64_t same = dev::match_any(static_cast<uint32_t>(x + 1), r.bits);  // few entries: MATCH.ANY on CUDA
  const int32_t rank = __builtin_popcountll(same & below);
  const bool leader = x >= 0 && rank == 0;
  const int32_t padded = leader ? padded_size(__builtin_popcountll(same), block_size) : 0;
  const int32_t lead_x = leader ? x : -1;
  // My expert's segment start: the padded sizes of the leaders of smaller experts, by a walk
  // over the lanes holding entries.  Eight lanes' shuffles in flight per step (H200, T = 8:
  // 4.01 -> 3.88 us, when unrolled by eight), by a fixed inner count: for `#pragma unroll 8`
  // over the run-time count, clang warned "loop not unrolled" (the body's shuffles are
  // convergent), so the AMD build kept the walk rolled; H100 x0.98 at T = 1.  A step reads
  // lanes L0 .. L0 + 7, all below ws (L0 < lanes <= ws; L0 and ws are multiples of 8); lanes
  // past n hold no leader (lead_x -1, padded 0) and add nothing.
  int32_t used = 0, start = 0;
  const uint32_t lanes = n < static_cast<uint32_t>(ws) ? n : static_cast<uint32_t>(ws);
  for (uint32_t L0 = 0; L0 < lanes; L0 += 8) {  // warp-uniform
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int L = static_cast<int>(L0) + u;
      const int32_t y = dev::shfl_idx(lead_x, L);
      const int32_t py = dev::shfl_idx(padded, L);
      used += py;
      if (y >= 0 && y < x) start += py;
    }
  }
  // Over the prefill (the same lanes' earlier writes, ordered by the warp barrier): the
  // entries and the used blocks that fall in this warp's part.  Every warp holds every
  // entry and every leader, so each slot and block is written by its part's warp alone.
  dev::sync_warp();
  const int32_t pos = start + rank;
  if (x >= 0 && pos >= static_cast<int32_t>(p0) && pos < static_cast<int32_t>(p1)) {
    sorted_ids[pos] = sorted_id(t, s);
    sorted_weights[pos] = wt;
  }
  if (lead_x >= 0) write_segment_blocks(start, start + padded, x, block_size, q0, q1, expert_of_block);
  if (gw == 0 && lane == 0) {
    counts[0] = used;
    counts[1] = static_cast<int32_t>(real);
  }
}

// The decode path (RoutingPlan::decode_path): the ranking by each warp alone, each warp
// writing its own part of the outputs; RoutingPlan::decode_blocks() blocks of
// decode_threads(), no shared memory, no block barrier.
__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kMaxThreads)
    routing_decode_kernel(const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride,
                          int64_t rows, int k, uint32_t k_magic, int experts, const int32_t* num_rows, int bits,
                          int block_size,
                          SortShares share, int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block,
                          int32_t* counts, int32_t max_padded, int32_t num_blocks, uint16_t* moe_out, int64_t moe_stride,
                          int64_t hidden) {
  const int64_t real = device_row_count(num_rows, rows);
  const EntryReader r{ids, ids_stride, static_cast<uint32_t>(k), experts, nullptr, static_cast<uint32_t>(real * k), bits,
                      k_magic};
  const int32_t pad_id = sorted_id(rows, k);
  const uint32_t n = static_cast<uint32_t>(rows * k);
  decode_entries(r, weights, weights_stride, n, block_size, pad_id, share, max_padded, num_blocks, real, sorted_ids,
                 sorted_weights, expert_of_block, counts);
  if (moe_out) zero_moe_rows(moe_out, moe_stride, rows, hidden);
}

// A presence bitmap of up to kBitmapMaxEntries entries per expert in shared memory: row x
// holds bit l of word l / 32 for each entry l (in the block's order) of expert x, and after
// bitmap_row, before[x][w] the entries of x in words below w.  Rows of kBitmapWords words
// and a stride one more (odd: thread e's reads of word w of row e fall in distinct banks).
constexpr int kBitmapWords = static_cast<int>(RoutingPlan::kBitmapMaxEntries / 32), kBitmapStride = kBitmapWords + 1;
template <class Shared>
HY4_DEVICE void bitmap_zero(Shared present, int experts, int tid, int nt) {
  for (int i = tid; i < experts * kBitmapStride; i += nt) present[i] = 0;
}
// The same for a block of nt >= experts threads (the bitmap kernel: bitmap_threads() >=
// scan_threads(E) >= E): kBitmapStride predicated passes, unrolled, so no trip count.  NVVM
// unrolls bitmap_zero's loop by four after an integer division for its trip count, the one
// MUFU.RCP left before the bitmap kernel's first barrier (thirtieth session).  H100, T = 8 /
// 64: x0.97 / 0.97 and x0.97 / 0.98 in two calls (routing.bitmap-zero-fixed-passes); in the
// chunk-bitmap kernel the same passes were x1.01 - 1.03 at T = 512 / 4096, so it keeps the
// loop (a rolled loop, routing.bitmap-zero-rolled, was x1.06 - 1.08 at T = 8 / 64).
template <class Shared>
HY4_DEVICE void bitmap_zero_passes(Shared present, int experts, int tid, int nt) {
#pragma unroll
  for (int q = 0; q < kBitmapStride; ++q) {
    const int i = tid + q * nt;
    if (i < experts * kBitmapStride) present[i] = 0;
  }
}
// Entry l of expert x (x >= 0): OR is commutative, so the bits are the same in any order.
template <class Shared>
HY4_DEVICE void bitmap_set(Shared present, int x, uint32_t l) {
  dev::shared_or(present, x * kBitmapStride + static_cast<int>(l >> 5), 1u << (l & 31u));
}
// Thread e: row e's exclusive prefix of popcounts into before[e][.]; returns e's entries.
template <class SharedU, class SharedI>
HY4_DEVICE int32_t bitmap_row(SharedU present, SharedI before, int e) {
  uint32_t w[kBitmapWords];
#pragma unroll
  for (int i = 0; i < kBitmapWords; ++i) w[i] = present[e * kBitmapStride + i];
  int32_t total = 0;
#pragma unroll
  for (int i = 0; i < kBitmapWords; ++i) {
    before[e * kBitmapStride + i] = total;
    total += __builtin_popcount(w[i]);
  }
  return total;
}
// Entry l's rank among the entries of its expert x: those before it in the block's order.
template <class SharedU, class SharedI>
HY4_DEVICE int32_t bitmap_rank(SharedU present, SharedI before, int x, uint32_t l) {
  const int at = x * kBitmapStride + static_cast<int>(l >> 5);
  return before[at] + __builtin_popcount(present[at] & ((1u << (l & 31u)) - 1u));
}

// The bitmap path (RoutingPlan::bitmap_path: 32 < n = T*k <= 512, or a mask with n <= 512;
// E <= 256): one kernel, every block ranks all entries, P = kBitmapEntriesPerThread = 2
// entries per thread (threads: the power of two >= E and >= n / 2), with three block
// barriers and no ballots.  (HY V4's T = 64 is n = 512: 256 threads, 8 warps per barrier.)
//  - Thread tid reads entries j = tid + i * nt, i < P (and their weights, and forms their
//    sorted ids), prefills its block's part of the slots and blocks (prefill_part), zeroes
//    its share of the presence bitmap; barrier.
//  - Entry j sets bit j of its expert's row (present[x][j / 32], dev::shared_or: OR is
//    commutative, so the bits are the same in any order); barrier.
//  - Thread e reads row e (kBitmapWords words), writes its exclusive prefix of popcounts
//    (before[e][w]: entries of e in words below w) and scans (padded size << 9 | unmasked)
//    over the warp by shuffles, keeping the exclusive value and the warp's total; barrier.
//  - An entry's place: its expert's segment start (the expert's exclusive value plus the
//    totals of the expert warps below) + before[x][j / 32] + the bits of its word below it,
//    all reads independent; thread e writes its segment's blocks; each only inside its
//    block's part (the prefill's owner, so no slot is written by two blocks).
// Bounded by its dependent chain: the reads, three barriers, one row of 16 shared words and a
// five-step scan; no loop depends on the data.  (H100, T = 64: 4.27 -> 2.53 us against the
// block-scan sort kernel; 584 static SASS instructions against its 3168.  T = 8: 2.30
// against the decode kernel's two entries per lane, 2.67; T = 1: 2.30 against its 1.76, so
// the decode kernel keeps T*k <= 32: docs/MEASUREMENTS.md, twenty-fifth session.  Two
// entries per thread, 256 threads at T = 64 in place of 512: 2.53 -> 2.50 / 2.51 and
// T = 8 2.30 / 2.31 -> 2.28 / 2.29, H100, two calls, twenty-eighth session.)
// Shared: E x 17 words twice (the odd stride makes thread e's reads of word w conflict-free),
// 35 KiB at E = 256: one block per CU on gfx942 (64 KiB of LDS); at most 256 threads now
// (E <= 256 and n / 2 <= 256), so 1 wave/SIMD; latency bound like the other one-kernel paths, one wave per SIMD is its need.
// AMD budget: routing_bitmap_kernel >= 1 waves/SIMD
__global__ void HY4_LAUNCH_BOUNDS(RoutingPlan::kMaxThreads)
    routing_bitmap_kernel(const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride,
                          int64_t rows, int k, uint32_t k_magic, int experts, const int32_t* mask,
                          const int32_t* num_rows, int block_size, SortShares share, int32_t* sorted_ids, float* sorted_weights,
                          int32_t* expert_of_block, int32_t* counts, int32_t max_padded, int32_t num_blocks,
                          uint16_t* moe_out, int64_t moe_stride, int64_t hidden) {
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int ws = dev::warp_size(), lane = dev::lane_id(), warp = tid / ws;
  HY4_SHARED_UPTO(uint32_t, present, RoutingPlan::kBitmapMaxExperts * kBitmapStride, experts * kBitmapStride);
  HY4_SHARED_UPTO(int32_t, before, RoutingPlan::kBitmapMaxExperts * kBitmapStride, experts * kBitmapStride);
  HY4_SHARED_UPTO(uint32_t, seg_excl, RoutingPlan::kBitmapMaxExperts, experts);  // within the expert's warp
  HY4_SHARED(uint32_t, warp_total, RoutingPlan::kBitmapMaxExperts / 32);          // the expert warps' totals
  const int64_t real = device_row_count(num_rows, rows);
  const EntryReader r{ids, ids_stride, static_cast<uint32_t>(k), experts, mask, static_cast<uint32_t>(real * k), 0, k_magic};
  const int32_t pad_id = sorted_id(rows, k);
  const uint32_t n = static_cast<uint32_t>(rows * k);
  const int c = static_cast<int>(blockIdx.x);
  // Entries j = tid + i * nt, i < P (n <= P * blockDim.x).
  constexpr int P = RoutingPlan::kBitmapEntriesPerThread;
  int32_t sid[P];  // each entry's sorted id, kept from the read to the write
  int32_t id[P];
  float wt[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    uint32_t t, s;
    id[i] = r.read_entry(0, static_cast<uint32_t>(tid + i * nt), n, weights, weights_stride, t, s, wt[i]);
    sid[i] = sorted_id(t, s);
  }
  uint32_t p0, p1, q0, q1;
  prefill_part(c, nt, tid, pad_id, share, max_padded, num_blocks, sorted_ids, sorted_weights, expert_of_block, p0, p1,
               q0, q1);
  bitmap_zero_passes(present, experts, tid, nt);
  dev::sync_block();
  int x[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const uint32_t j = static_cast<uint32_t>(tid + i * nt);
    x[i] = r.expert_of(j, id[i]);
    if (x[i] >= 0) bitmap_set(present, x[i], j);
  }
  dev::sync_block();
  // Thread e: its row's prefix counts, padded size and scan within its warp.
  const int e = tid;
  const int32_t total = e < experts ? bitmap_row(present, before, e) : 0;
  const bool mine = e < experts && !expert_masked(mask, e);
  const int32_t padded = padded_size(total, block_size);
  // padded sizes sum to at most 512 + 256 x 1023 < 2^19, unmasked experts to 256 < 2^9
  const uint32_t v = (static_cast<uint32_t>(padded) << 9) | (mine ? 1u : 0u);
  const uint32_t inc = warp_inclusive_scan(v);
  const int expert_warps = (experts + ws - 1) / ws;
  if (lane == ws - 1 && warp < expert_warps) warp_total[warp] = inc;
  if (e < experts) seg_excl[e] = inc - v;
  dev::sync_block();
  // The totals of the expert warps below warp w (at most 8: E <= 256, warp >= 32).
  auto warps_below = [&](int w) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < RoutingPlan::kBitmapMaxExperts / 32; ++i) acc += i < w ? warp_total[i] : 0u;
    return acc;
  };
#pragma unroll
  for (int i = 0; i < P; ++i)
    if (x[i] >= 0) {
      const uint32_t start = seg_excl[x[i]] + warps_below(x[i] / ws);
      const int32_t pos =
          static_cast<int32_t>(start >> 9) + bitmap_rank(present, before, x[i], static_cast<uint32_t>(tid + i * nt));
      if (pos >= static_cast<int32_t>(p0) && pos < static_cast<int32_t>(p1)) {
        sorted_ids[pos] = sid[i];
        sorted_weights[pos] = wt[i];
      }
    }
  if (e < experts && padded > 0) {
    const uint32_t start = inc - v + warps_below(warp);
    const int32_t first = static_cast<int32_t>(start >> 9);
    write_segment_blocks(first, first + padded, static_cast<int32_t>(start & 511u), block_size, q0, q1, expert_of_block);
  }
  if (c == 0 && tid == 0) {
    counts[0] = static_cast<int32_t>(warps_below(expert_warps) >> 9);
    counts[1] = static_cast<int32_t>(real);
  }
  if (moe_out) zero_moe_rows(moe_out, moe_stride, rows, hidden);
}

// Thread e of a two-kernel sort block: expert e's entries in all chunks (total) and in the
// chunks below c (before), from the count kernel's count[u][e]: every read in flight at once
// (the large-T bound).
HY4_DEVICE inline void chunk_counts(const int32_t* counts_ce, int chunks, int experts, int e, int c, int32_t& total,
                                    int32_t& before) {
  int32_t v[RoutingPlan::kMaxChunks];
#pragma unroll
  for (int u = 0; u < RoutingPlan::kMaxChunks; ++u)
    v[u] = u < chunks ? counts_ce[static_cast<int64_t>(u) * experts + e] : 0;
#pragma unroll
  for (int u = 0; u < RoutingPlan::kMaxChunks; ++u) {
    before += u < c ? v[u] : 0;
    total += v[u];
  }
}

// The segments of the sort blocks (thread e, expert e's `total` entries, `before` of them in
// earlier chunks): one block scan of both padded sizes (< 2^31, above 16 bits) and unmasked
// flags (<= 512, below), then seg_end / seg_local (inclusive), seg_total and seg_base (where
// this block's first entry of e goes), and a barrier.  Returns the scan; *padded e's padded size.
template <class SharedI, class SharedW>
HY4_DEVICE uint64_t scan_segments(int e, int experts, const int32_t* mask, int32_t total, int32_t before, int block_size,
                                  SharedW warp_total, SharedI seg_end, SharedI seg_local, SharedI seg_total,
                                  SharedI seg_base, int32_t* padded) {
  const bool mine = e < experts && !expert_masked(mask, e);
  *padded = padded_size(total, block_size);
  const uint64_t both = block_inclusive_scan((static_cast<uint64_t>(*padded) << 16) | (mine ? 1u : 0u), warp_total);
  const int32_t end = static_cast<int32_t>(both >> 16);
  seg_end[e] = end;
  seg_local[e] = static_cast<int32_t>(both & 0xFFFF);
  seg_total[e] = total;
  seg_base[e] = end - *padded + before;
  dev::sync_block();
  return both;
}

// Two kernels: block c's share of the padding, a warp per expert of its share of the experts
// (lanes stride the expert's padding and blocks), then its share of the unused tail.
template <class SharedI>
HY4_DEVICE void pad_share(int c, int32_t used, int experts, int block_size, int32_t pad_id, SortShares share,
                          SharedI seg_end, SharedI seg_local, SharedI seg_total, int32_t max_padded, int32_t num_blocks,
                          int64_t real, int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block,
                          int32_t* counts) {
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int ws = dev::warp_size(), warps = nt / ws, warp = tid / ws;
  uint32_t e0, e1;
  part_of(static_cast<uint32_t>(experts), static_cast<uint32_t>(share.experts), c, e0, e1);
  for (int x = static_cast<int>(e0) + warp; x < static_cast<int>(e1); x += warps) {
    const int32_t first = x > 0 ? static_cast<int32_t>(seg_end[x - 1]) : 0, last = seg_end[x];
    const int32_t local = seg_local[x] - 1;
    pad_segment(first, seg_total[x], last, local, block_size, pad_id, sorted_ids, sorted_weights, expert_of_block);
  }
  write_unused_tail(c, tid, nt, used, pad_id, block_size, share, max_padded, num_blocks, real, sorted_ids,
                    sorted_weights, expert_of_block, counts);
}

// kOneKernel (counts_ce == nullptr): the one-kernel path (every block ranks all entries,
// prefills its part of the slots and blocks and writes the entries and used blocks that
// fall in it).  Otherwise block c ranks and writes chunk c (the blocks past the chunks have
// no entries: they only write padding), then its share of the padding.  Two instances, so
// that the two-kernel one carries none of the one-kernel code (in one kernel with a run-time
// flag the two-kernel path was x1.01 - 1.02 slower at T >= 512, H200).
// Its grid has at most 128 blocks, one per SM of an H100 / H200, so on CUDA it asks for the
// registers of one block per SM (HY4_LAUNCH_BOUNDS_ONE_BLOCK): ptxas gives 112 instead of
// 77, no spill (tools/hy4_cuda_budget.py); H100: x0.99 from T = 4096 on, never slower.
template <bool kOneKernel>
__global__ void HY4_LAUNCH_BOUNDS_ONE_BLOCK(RoutingPlan::kMaxThreads)
    routing_sort_kernel(const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride,
                        int64_t rows, int k, int experts, const int32_t* mask, const int32_t* num_rows,
                        int64_t chunk_tokens, int bits, const int32_t* counts_ce, int chunks, int block_size,
                        SortShares share, int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block,
                        int32_t* counts, int32_t max_padded, int32_t num_blocks, uint16_t* moe_out, int64_t moe_stride,
                        int64_t hidden) {
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int ws = dev::warp_size(), warps = nt / ws, warp = tid / ws, lane = dev::lane_id();
  HY4_SHARED_UPTO(int32_t, hist, RoutingPlan::kMaxWarps * RoutingPlan::kMaxExperts, warps * experts);
  HY4_SHARED_UPTO(int32_t, seg_end, RoutingPlan::kMaxThreads, nt);    // inclusive scan of padded sizes
  HY4_SHARED_UPTO(int32_t, seg_local, RoutingPlan::kMaxThreads, nt);  // inclusive scan of unmasked flags
  HY4_SHARED_UPTO(int32_t, seg_total, RoutingPlan::kMaxThreads, nt);  // entries of expert e
  HY4_SHARED_UPTO(int32_t, seg_base, RoutingPlan::kMaxThreads, nt);   // where this block's first entry of e goes
  HY4_SHARED_UPTO(uint64_t, warp_total, RoutingPlan::kMaxWarps, warps);
  const int64_t real = device_row_count(num_rows, rows);
  const EntryReader r{ids, ids_stride, static_cast<uint32_t>(k), experts, mask, static_cast<uint32_t>(real * k), bits};
  constexpr bool one_kernel = kOneKernel;
  const int c = static_cast<int>(blockIdx.x);
  const uint32_t n = static_cast<uint32_t>(rows * k);
  uint32_t r0 = 0, r1 = n, a, b;  // the entries this block ranks
  if (!one_kernel) part_of(n, static_cast<uint64_t>(chunk_tokens * k), c, r0, r1);
  EntryBatch first;  // the warp's first batch, read once for the count and the ranking
  // One kernel: this block's part of the slots and blocks, as if unused, under the reads'
  // latency; the block writes the entries and used blocks in its part over them (below,
  // after the barriers), so no slot is written by two blocks.
  const int32_t pad_id = sorted_id(rows, k);
  uint32_t p0 = 0, p1 = 0, q0 = 0, q1 = 0;
  auto prefill = [&]() {
    if constexpr (one_kernel)
      prefill_part(c, nt, tid, pad_id, share, max_padded, num_blocks, sorted_ids, sorted_weights, expert_of_block, p0,
                   p1, q0, q1);
  };
  const int active = count_block(r, r0, r1, hist, a, b, weights, weights_stride, &first, prefill);  // warps with entries: the rows used

  // Two kernels: the count kernel's count[c][e] is read below.  Everything above (this
  // block's own count) overlapped the count kernel; every thread waits, one kernel or two.
  dev::wait_prior_grid();
  // Thread e: the warps' exclusive sums (in place), the expert's total and padded size.
  const int e = tid;
  int32_t total = 0, before = 0;
  if (e < experts) {
    int32_t acc = 0;
    for (int w = 0; w < active; ++w) {
      const int32_t v = hist[w * experts + e];
      hist[w * experts + e] = acc;
      acc += v;
    }
    if constexpr (one_kernel)
      total = acc;
    else
      chunk_counts(counts_ce, chunks, experts, e, c, total, before);
  }
  int32_t padded;
  const uint64_t both = scan_segments(e, experts, mask, total, before, block_size, warp_total, seg_end, seg_local,
                                      seg_total, seg_base, &padded);
  const int32_t end = static_cast<int32_t>(both >> 16);
  const int32_t used = seg_end[nt - 1];

  // One kernel: the padding was prefilled; expert e's used blocks in this block's part go out
  // before the ranking, whose dependent chain they do not need (H100, T = 64: x0.98 against
  // after it; the two-kernel padding moved there too was x1.04 at T = 4096).
  if constexpr (one_kernel) {
    if (e < experts && padded > 0)
      write_segment_blocks(end - padded, end, static_cast<int32_t>(both & 0xFFFF) - 1, block_size, q0, q1, expert_of_block);
    if (c == 0 && tid == 0) {
      counts[0] = used;
      counts[1] = static_cast<int32_t>(real);
    }
  }
  // Rank and write the entries (one kernel: those whose slot is in this block's part).
  const uint64_t below = (uint64_t{1} << lane) - 1;  // lane < 64
  const int row = warp * experts;
  EntryCursor at(a + lane, r.k, static_cast<uint32_t>(ws));
  for (uint32_t base = a; base < b; base += static_cast<uint32_t>(ws * kGroupsAhead)) {
    EntryBatch batch;
    if (base == a) {
      batch = first;
      for (int u = 0; u < kGroupsAhead; ++u) at.step();
    } else {
      batch.read(r, weights, weights_stride, base, b, at);
    }
#pragma unroll
    for (int u = 0; u < kGroupsAhead; ++u) {
      if (base + u * ws >= b) break;  // warp-uniform
      const uint32_t j = base + u * ws + lane;
      const int x = r.expert_of(j, batch.id[u]);
      const uint64_t m = base == a ? first.same[u] : r.same_expert_lanes(x);  // the count's masks
      const int leader = x >= 0 ? dev::lowest_lane(m) : lane;
      int32_t start = x >= 0 && lane == leader ? static_cast<int32_t>(hist[row + x]) : 0;
      start = dev::shfl_idx(start, leader);
      if (x >= 0) {
        if (lane == leader) hist[row + x] = start + __builtin_popcountll(m);
        const int32_t pos = seg_base[x] + start + __builtin_popcountll(m & below);
        if (!one_kernel || (pos >= static_cast<int32_t>(p0) && pos < static_cast<int32_t>(p1))) {
          sorted_ids[pos] = batch.sid[u];
          sorted_weights[pos] = batch.wt[u];
        }
      }
      dev::sync_warp();
    }
  }

  if constexpr (one_kernel) {
    if (moe_out) zero_moe_rows(moe_out, moe_stride, rows, hidden);
    return;
  }
  pad_share(c, used, experts, block_size, pad_id, share, seg_end, seg_local, seg_total, max_padded, num_blocks, real,
            sorted_ids, sorted_weights, expert_of_block, counts);
}

// The two-kernel sort with a bitmap ranking (RoutingPlan::sort_bitmap: chunks of at most
// kBitmapMaxEntries = 512 entries, E <= 256; HY V4's T = 257 .. 4096), the count kernel's
// dependent launch in place of routing_sort_kernel<false>: block c reads chunk c's entries
// (l = tid + i blockDim.x, two per thread in blocks of 256), sets their bits in the presence
// bitmap (rows by expert, bits in chunk order), and thread e reads row e (its entries in the
// chunk, before[e][.]) before it waits for the count kernel; then the count-matrix reads, the
// segment scan, and each entry's place = seg_base[x] + bitmap_rank; then its padding share.
// Against the ballot ranking: no match masks, no per-warp histogram rows and their sums, no
// warp-serial leader updates; three barriers.  (H100, T = 512 / 4096: 6.80 / 7.24 -> 6.30 /
// 6.81 us.)
// AMD budget: routing_sort_bitmap_kernel >= 1 waves/SIMD
__global__ void HY4_LAUNCH_BOUNDS_ONE_BLOCK(RoutingPlan::kMaxThreads)
    routing_sort_bitmap_kernel(const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride,
                               int64_t rows, int k, uint32_t k_magic, int experts, const int32_t* mask,
                               const int32_t* num_rows, int64_t chunk_tokens, const int32_t* counts_ce, int chunks, int block_size,
                               SortShares share, int32_t* sorted_ids, float* sorted_weights, int32_t* expert_of_block,
                               int32_t* counts, int32_t max_padded, int32_t num_blocks) {
  constexpr int P = static_cast<int>(RoutingPlan::kBitmapMaxEntries / 256);  // entries per thread (blocks >= 256)
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int warps = nt / dev::warp_size();
  HY4_SHARED_UPTO(uint32_t, present, RoutingPlan::kBitmapMaxExperts * kBitmapStride, experts * kBitmapStride);
  HY4_SHARED_UPTO(int32_t, before, RoutingPlan::kBitmapMaxExperts * kBitmapStride, experts * kBitmapStride);
  HY4_SHARED_UPTO(int32_t, seg_end, RoutingPlan::kMaxThreads, nt);
  HY4_SHARED_UPTO(int32_t, seg_local, RoutingPlan::kMaxThreads, nt);
  HY4_SHARED_UPTO(int32_t, seg_total, RoutingPlan::kMaxThreads, nt);
  HY4_SHARED_UPTO(int32_t, seg_base, RoutingPlan::kMaxThreads, nt);
  HY4_SHARED_UPTO(uint64_t, warp_total, RoutingPlan::kMaxWarps, warps);
  const int64_t real = device_row_count(num_rows, rows);
  const EntryReader r{ids, ids_stride, static_cast<uint32_t>(k), experts, mask, static_cast<uint32_t>(real * k), 0, k_magic};
  const int c = static_cast<int>(blockIdx.x);
  uint32_t r0, r1;  // chunk c (empty for the blocks past the chunks)
  part_of(static_cast<uint32_t>(rows * k), static_cast<uint64_t>(chunk_tokens * k), c, r0, r1);
  const int64_t c_first = int64_t{c} * chunk_tokens;
  const uint32_t t0 = static_cast<uint32_t>(c_first < rows ? c_first : rows);  // r0 = t0 * k
  int32_t sid[P];  // each entry's sorted id, kept from the read to the write
  int32_t id[P];
  float wt[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    uint32_t t, s;
    id[i] = r.read_entry(t0, static_cast<uint32_t>(tid + i * nt), r1, weights, weights_stride, t, s, wt[i]);
    sid[i] = sorted_id(t, s);
  }
  bitmap_zero(present, experts, tid, nt);
  dev::sync_block();
  int x[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const uint32_t l = static_cast<uint32_t>(tid + i * nt);
    x[i] = r.expert_of(r0 + l, id[i]);
    if (x[i] >= 0) bitmap_set(present, x[i], l);
  }
  dev::sync_block();
  const int e = tid;
  if (e < experts) bitmap_row(present, before, e);  // the chunk's own count is in the count matrix too
  // Everything above overlapped the count kernel; every thread waits before the count matrix.
  dev::wait_prior_grid();
  int32_t total = 0, before_chunks = 0;
  if (e < experts) chunk_counts(counts_ce, chunks, experts, e, c, total, before_chunks);
  int32_t padded;
  scan_segments(e, experts, mask, total, before_chunks, block_size, warp_total, seg_end, seg_local, seg_total, seg_base,
                &padded);
  const int32_t used = seg_end[nt - 1];
#pragma unroll
  for (int i = 0; i < P; ++i)
    if (x[i] >= 0) {
      const int32_t pos = seg_base[x[i]] + bitmap_rank(present, before, x[i], static_cast<uint32_t>(tid + i * nt));
      sorted_ids[pos] = sid[i];
      sorted_weights[pos] = wt[i];
    }
  const int32_t pad_id = sorted_id(rows, k);
  pad_share(c, used, experts, block_size, pad_id, share, seg_end, seg_local, seg_total, max_padded, num_blocks, real,
            sorted_ids, sorted_weights, expert_of_block, counts);
}

// Bits of expert + 1 for match_any (ids -1 .. E - 1 map to 0 .. E).
int id_bits(int experts) {
  int bits = 0;
  while ((1 << bits) < experts + 1) ++bits;
  return bits;
}

}  // namespace

void RoutingPlan::launch(hy4::rt::Stream stream) const {
  const RoutingArgs& a = args_;
  const int64_t T = a.ids.rows;
  const int k = static_cast<int>(a.ids.cols), E = a.experts;
  const bool one = one_kernel(T, k);
  const int C = one ? 1 : chunks(T);
  const int64_t ct = chunk_tokens(T);
  const dim3 block(static_cast<unsigned>(block_threads(T, k, E)));
  uint16_t* moe = static_cast<uint16_t*>(a.moe_out.data);
  const int64_t hidden = moe ? a.moe_out.cols : 0;
  if (!one)
    HY4_LAUNCH_PRIMARY_IF(true, routing_count_kernel, dim3(static_cast<unsigned>(C)), block, stream,
                          static_cast<const int32_t*>(a.ids.data), a.ids.row_stride, T, k, E, a.expert_mask,
                          a.num_rows, ct, id_bits(E), a.workspace, moe, a.moe_out.row_stride, hidden);
  const bool decode = decode_path(T, k, a.expert_mask != nullptr);
  const int G = decode ? decode_blocks(T, k, E, a.block_size) : sort_blocks(T, k, E, a.block_size);
  const int64_t mp = max_padded(T, k, E, a.block_size), nb = num_blocks(T, k, E, a.block_size);
  // Each of `parts` parts of [0, total) (part_of): ceil(total / parts), at least 1.
  auto per = [](int64_t total, int64_t parts) { return static_cast<int32_t>(std::max<int64_t>(1, (total + parts - 1) / parts)); };
  const SortShares share{per(E, G), per(mp, G), per(nb, G)};
  if (decode) {
    // The decode kernel's parts of the slots and blocks are per grid warp (decode_entries).
    const int64_t gw = int64_t{G} * (decode_threads(T, k, E) / hy4::rt::warp_size());
    const SortShares warp_share{0, per(mp, gw), per(nb, gw)};
    HY4_LAUNCH(routing_decode_kernel, dim3(static_cast<unsigned>(G)), dim3(static_cast<unsigned>(decode_threads(T, k, E))),
               stream,
               static_cast<const int32_t*>(a.ids.data), a.ids.row_stride, static_cast<const float*>(a.weights.data),
               a.weights.row_stride, T, k, k_magic_, E, a.num_rows, id_bits(E), a.block_size, warp_share, a.sorted_ids,
               a.sorted_weights, a.expert_of_block, a.counts, static_cast<int32_t>(mp), static_cast<int32_t>(nb), moe,
               a.moe_out.row_stride, hidden);
    return;
  }
  if (bitmap_path(T, k, E, a.expert_mask != nullptr)) {
    HY4_LAUNCH(routing_bitmap_kernel, dim3(static_cast<unsigned>(G)), dim3(static_cast<unsigned>(bitmap_threads(T, k, E))),
               stream, static_cast<const int32_t*>(a.ids.data), a.ids.row_stride, static_cast<const float*>(a.weights.data),
               a.weights.row_stride, T, k, k_magic_, E, a.expert_mask, a.num_rows, a.block_size, share, a.sorted_ids,
               a.sorted_weights, a.expert_of_block, a.counts, static_cast<int32_t>(mp), static_cast<int32_t>(nb), moe,
               a.moe_out.row_stride, hidden);
    return;
  }
  // Two kernels: the sort kernel may start while the count kernel runs (see the design note).
#define HY4_SORT_ARGS(counts_ce, moe_rows)                                                                            \
  static_cast<const int32_t*>(a.ids.data), a.ids.row_stride, static_cast<const float*>(a.weights.data),           \
      a.weights.row_stride, T, k, E, a.expert_mask, a.num_rows, ct, id_bits(E), counts_ce, C, a.block_size, share, \
      a.sorted_ids, a.sorted_weights, a.expert_of_block, a.counts, static_cast<int32_t>(mp), static_cast<int32_t>(nb), \
      moe_rows, a.moe_out.row_stride, hidden
  if (one)
    HY4_LAUNCH(routing_sort_kernel<true>, dim3(static_cast<unsigned>(G)), block, stream,
               HY4_SORT_ARGS(static_cast<const int32_t*>(nullptr), moe));
  else if (sort_bitmap(T, k, E))
    HY4_LAUNCH_DEPENDENT_IF(true, routing_sort_bitmap_kernel, dim3(static_cast<unsigned>(G)), block, stream,
                            static_cast<const int32_t*>(a.ids.data), a.ids.row_stride,
                            static_cast<const float*>(a.weights.data), a.weights.row_stride, T, k, k_magic_, E,
                            a.expert_mask,
                            a.num_rows, ct, static_cast<const int32_t*>(a.workspace), C, a.block_size, share,
                            a.sorted_ids, a.sorted_weights, a.expert_of_block, a.counts, static_cast<int32_t>(mp),
                            static_cast<int32_t>(nb));
  else
    HY4_LAUNCH_DEPENDENT_IF(true, routing_sort_kernel<false>, dim3(static_cast<unsigned>(G)), block, stream,
                            HY4_SORT_ARGS(static_cast<const int32_t*>(a.workspace), static_cast<uint16_t*>(nullptr)));
#undef HY4_SORT_ARGS
}

}  // namespace hy4
