// topk.hip: the biased sigmoid top-k router, one source for HIP, CUDA and the CPU
// executor (see topk.h for the contract).
//
// Two kernels: topk_row_block_kernel (a block per row, T <= kBlockPerRowMaxRows: its
// design is written above it, below) and topk_kernel, described here.
// topk_kernel: one warp per row.  Lane l owns experts l, l + warpSize, ... and
// keeps, in registers (kPerLane slots, fully unrolled: no dynamic register indexing,
// no scratch), each expert's logit, bias and estimated choice score.  Its 2 kPerLane
// reads are issued before any arithmetic and under no branch (a slot past E reads expert
// E - 1 and is then marked empty): one memory latency per row, not one per slot.  Dense
// rows (fp32 logits, E = kPerLane x warpSize: HY V4's 256) read from one row pointer at
// fixed offsets, with no clamp, no per-slot 64-bit address and no past-E select (H100,
// topk.warp-dense-rows: x0.96 at T = 4096, x0.92 at 8192).  Rank keys are
// 64-bit integers that order (c desc, id asc) exactly as the bit model does (c's bits
// mapped to an unsigned order, then the complemented id).
//  - Estimates (kPerLane = 4 or 8): each slot's c as an fp32 estimate ce =
//    dev::fast_sigmoid(x) + b (the hardware's approximate exp and divide, within 2^-16
//    of sigmoid_f32; NaN -> -inf); the bit-exact sigmoid_f32 runs only for the
//    candidates (one per lane, not kPerLane), or for every slot on the fallback below.
//    (kPerLane = 16: the exact order words instead of estimates, threshold = floor.)
//  - Filter: floor = the k-th largest of the lanes' best ce (one bitonic sort of ws
//    32-bit values over the lanes); k distinct experts reach it, so the row's k-th best
//    exact c is at least floor minus the estimate's error, and every expert of the row's
//    k best has ce >= threshold = floor - margin(floor) (candidate_threshold): one fp32
//    compare per slot.  Typically k to k + 4 of E are candidates.
//  - At most ws candidates (warp-uniform): ballots give each its slot in a per-warp
//    shared list (logit and id; with estimates the other lanes store to their own spare
//    entries: no branch), lane i forms candidate i's exact key and s and ranks it
//    by counting the larger keys, rank r < k goes to rank slot r; every lane sums the k
//    s values in rank order (the bit model's fp32 additions), lane r writes rank r.
//    About a third of the instructions of the rounds.
//  - More (many ties at the floor, e.g. a constant row): the lane sorts its slots once
//    (bitonic network); each of the k rounds is a butterfly of 64-bit shuffles over the
//    lanes' heads, the owner broadcasts its head's s and pops it (empty slots hold key 0,
//    below every real key), lane r keeps rank r; the sum gathered by shuffles.
// The total order makes the result independent of the warp size, of the lane layout
// and of the path taken.
// AMD budget: the per-lane slots live in VGPRs (no scratch, by design), so the 16-slot
// instance is the heaviest; at large T the kernel is throughput-bound and needs 4 waves
// per SIMD to overlap one warp's shuffle chain with others' loads.  (SGPR spills, which
// the compiler sends to VGPR lanes, not memory, are reported but allowed.)
// AMD budget: topk_kernel >= 4 waves/SIMD
// AMD budget: topk_row_block_kernel (7 waves/SIMD on gfx942 now, SGPR-bound: 57 VGPRs, 106 SGPRs, 8.4 KiB LDS) is latency bound per row
// and needs 2 blocks per CU in flight at decode batch sizes.
// AMD budget: topk_row_block_kernel >= 2 waves/SIMD
#include <climits>

#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"
#include "op_device.h"
#include "topk.h"

namespace hy4 {
namespace {

// Experts per lane (kPerLane): TopkPlan::slots_per_lane(E, warp) at launch, 4, 8 or 16
// (fewer slots: fewer instructions on the serial path and fewer registers).  HY V4's
// E = 256 takes 8 at warp 32 and 4 at wave64, where 8 left half of them empty (and
// loaded: 125 VGPRs on gfx942 for nothing).

// (c desc, id asc) as one unsigned key: larger is better.  c is never NaN here (NaN
// was mapped to -inf) and never -0 (+0 + -0 = +0; normalised anyway so that -0 and +0
// tie, as float comparison makes them in the bit model).
HY4_DEVICE inline uint64_t rank_key(float c, int id) {
  uint32_t u = f32_bits(c == 0.0f ? 0.0f : c);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(u) << 32) | static_cast<uint32_t>(0xFFFFFFFFu - static_cast<uint32_t>(id));
}
HY4_DEVICE inline int key_id(uint64_t key) { return static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(key)); }
HY4_DEVICE inline uint64_t max_key(uint64_t a, uint64_t b) { return a > b ? a : b; }
// The order word of a key: (c desc) alone, without the id (0 for an empty slot).
HY4_DEVICE inline uint32_t key_order(uint64_t key) { return static_cast<uint32_t>(key >> 32); }

// Expert e of row t's logit, as fp32.
HY4_DEVICE inline float load_logit(const void* logits, int logits_bf16, int64_t logits_stride, int64_t t, int e) {
  return logits_bf16 ? bf16_to_f32(static_cast<const uint16_t*>(logits)[t * logits_stride + e])
                     : static_cast<const float*>(logits)[t * logits_stride + e];
}
// Logit x of expert e with bias b: s = sigmoid_f32(x) into *s, and its rank key (c = s +
// b; NaN chooses like -inf).  Every key of both kernels is formed this way.
HY4_DEVICE inline uint64_t exact_key(float x, float b, int e, float* s) {
  const float sv = sigmoid_f32(x);
  const float cv = sv + b;
  *s = sv;
  return rank_key(is_nan_f32(cv) ? f32_from_bits(0xff800000u) : cv, e);
}
HY4_DEVICE inline uint64_t expert_key(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
                                      int64_t t, int e, float* s) {
  return exact_key(load_logit(logits, logits_bf16, logits_stride, t, e), bias[e], e, s);
}

// The filter's threshold from floor, the k-th largest lane maximum of the estimates
// ce = fast_sigmoid(x) + b (NaN mapped to -inf).  Per expert |c - ce| <= 2^-16 + 2^-22 |ce|
// (fast_sigmoid's promise and the two fp32 roundings of s + b and fs + b).  k distinct
// experts have ce >= floor, so the row's k-th best exact c is >= floor - 2^-16 - 2^-22
// |floor| (the bound is increasing in ce), and an expert whose c reaches that has ce >=
// floor - 2^-15 - 2^-21 |floor| (to first order).  The margin 2^-12 + 2^-19 |floor| is 8
// and 4 times that, so the fp32 roundings of the margin and of floor - margin (2^-24
// relative each) cannot take the threshold above the bound.  +-inf floors are exact: c
// is infinite exactly when b is, and then ce = c.
HY4_DEVICE inline float candidate_threshold(float floor_ce) {
  if (!(floor_ce - floor_ce == 0.0f)) return floor_ce;
  return floor_ce - (0x1p-12f + 0x1p-19f * (floor_ce < 0.0f ? -floor_ce : floor_ce));
}

// The larger / smaller of two network values: fp32 estimates (never NaN: a lane's maximum
// starts at -inf and takes no NaN) or order words.  fmaxf / fminf, so that a network step is
// one min-or-max instruction (CUDA: FMNMX with a predicate) instead of two compares and two
// selects; of +0 and -0 either may come back, and both give the same threshold.  (H100,
// topk.warp-floor-by-min-max: x0.95 at T = 4096, x0.97 at 8192.)
HY4_DEVICE inline float lane_max_of(float a, float b) { return fmaxf(a, b); }
HY4_DEVICE inline float lane_min_of(float a, float b) { return fminf(a, b); }
HY4_DEVICE inline uint32_t lane_max_of(uint32_t a, uint32_t b) { return a > b ? a : b; }
HY4_DEVICE inline uint32_t lane_min_of(uint32_t a, uint32_t b) { return a < b ? a : b; }

// The k-th largest of the lanes' v (k <= warpSize), in every lane: a bitonic sort over the
// lanes (descending), then lane k - 1's value.  No NaN may enter.
template <class T>
HY4_DEVICE inline T kth_largest_over_lanes(T v, int k, int lane) {
  const int ws = dev::warp_size();
  for (int size = 2; size <= ws; size *= 2)
    for (int stride = size / 2; stride > 0; stride /= 2) {
      const T pv = dev::shfl_xor(v, stride);
      const bool keep_max = ((lane & stride) == 0) == ((lane & size) == 0);
      v = keep_max ? lane_max_of(pv, v) : lane_min_of(pv, v);
    }
  return dev::shfl_idx(v, k - 1);
}

// The scale of a row whose selected s values sum (in rank order) to sum.
HY4_DEVICE inline float row_scale(float sum, int renormalize, float rsf) {
  return renormalize ? rsf / (sum < 1e-20f ? 1e-20f : sum) : rsf;
}
// A selected expert's weight: s * scale, every NaN the canonical 0x7FC00000.
HY4_DEVICE inline float routed_weight(float s, float scale) {
  const float w = s * scale;
  return is_nan_f32(w) ? f32_from_bits(0x7fc00000u) : w;
}

// Lanes r < k of a warp write rank r of the row from the rank slots [base, base + k):
// every lane sums the k s values in rank order (the bit model's fp32 additions), then the
// weight and the id.  Both kernels end a row this way.  kOneReadBatch (the block path,
// latency-bound): the slots are read eight at a time into registers (indices clamped, the
// reads unconditional) with the lane's own slot, so that at k = 8 one round trip to shared
// memory precedes the adds; the unroll-8 loop below ran only its remainder at k = 8, each
// read behind the previous add (H100, topk.block-row-sum-one-read-batch: x0.96 / 0.96 /
// 0.97 at T = 1 / 8 / 64).  The warp path keeps the loop: the eight registers cost
// topk_kernel<8> and <16> a wave per SIMD on gfx942 and gfx950.
template <bool kOneReadBatch = false, class SharedS, class SharedK>
HY4_DEVICE inline void write_ranked_row(SharedS rank_s, SharedK rank_key_of, int base, int k, int lane,
                                        int renormalize, float rsf, float* w_row, int32_t* id_row) {
  if constexpr (kOneReadBatch) {
    const int mine = base + (lane < k ? lane : 0);
    const float my_s = rank_s[mine];
    const uint64_t my_key = rank_key_of[mine];
    float v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = rank_s[base + (u < k ? u : 0)];
    float sum = v[0];
#pragma unroll
    for (int u = 1; u < 8; ++u)
      if (u < k) sum = sum + v[u];
    for (int r0 = 8; r0 < k; r0 += 8) {
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = rank_s[base + (r0 + u < k ? r0 + u : 0)];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (r0 + u < k) sum = sum + v[u];
    }
    const float scale = row_scale(sum, renormalize, rsf);
    if (lane < k) {
      w_row[lane] = routed_weight(my_s, scale);
      id_row[lane] = key_id(my_key);
    }
    return;
  }
  float sum = rank_s[base];
  // Unrolled so the shared reads issue ahead of the in-order adds (the adds' order is the
  // bit model's); H200: about 2 % at every T (topk.row-sum-unrolled).
#pragma unroll 8
  for (int r = 1; r < k; ++r) sum = sum + rank_s[base + r];
  const float scale = row_scale(sum, renormalize, rsf);
  if (lane < k) {
    w_row[lane] = routed_weight(rank_s[base + lane], scale);
    id_row[lane] = key_id(rank_key_of[base + lane]);
  }
}

template <int kPerLane>
__global__ void HY4_LAUNCH_BOUNDS(TopkPlan::kBlockThreads) topk_kernel(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
                            int64_t rows, int experts, int k, int renormalize, float rsf, const int32_t* num_rows,
                            float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride) {
  constexpr bool kEstimate = kPerLane <= 8;  // fast_sigmoid bounds (else exact order words)
  const int ws = dev::warp_size();
  const int lane = dev::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  // Per warp: ws candidate slots, then (kEstimate) a spare entry per lane (ws + lane: every
  // lane stores at every list step, a lane without a candidate there to its own spare, so no
  // two threads ever write one address: compute-sanitizer's racecheck reported a single
  // shared spare entry), and k rank slots (the filter path).  The 16-slot instance keeps ws
  // entries (the larger list cost it its gfx942 VGPR budget: 131, 3 waves per SIMD).
  constexpr int kListPerLane = kEstimate ? 2 : 1;
  HY4_SHARED_UPTO(uint64_t, cand_key, kListPerLane * TopkPlan::kBlockThreads, warps * kListPerLane * ws);
  HY4_SHARED_UPTO(float, cand_s, kListPerLane * TopkPlan::kBlockThreads, warps * kListPerLane * ws);  // a candidate's logit, then its s
  HY4_SHARED_UPTO(int32_t, cand_e, kListPerLane * TopkPlan::kBlockThreads, warps * kListPerLane * ws);
  HY4_SHARED_UPTO(uint64_t, rank_key_of, TopkPlan::kBlockThreads / 32 * TopkPlan::kMaxK, warps * k);
  HY4_SHARED_UPTO(float, rank_s, TopkPlan::kBlockThreads / 32 * TopkPlan::kMaxK, warps * k);
  const int cbase = warp * kListPerLane * ws, rbase = warp * k;
  const uint64_t below = (uint64_t{1} << lane) - 1;  // the lanes under mine
  const int64_t real_rows = device_row_count(num_rows, rows);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * warps + warp; t < rows;
       t += static_cast<int64_t>(gridDim.x) * warps) {
    float* w_row = weights + t * weights_stride;
    int32_t* id_row = ids + t * ids_stride;
    if (t >= real_rows) {  // graph-padded row
      for (int r = lane; r < k; r += ws) {
        w_row[r] = 0.0f;
        id_row[r] = -1;
      }
      continue;
    }
    // kEstimate: per slot the estimate ce (for the floor and the candidates; NaN for a
    // slot past E, which no comparison takes) and the logit (for a candidate's exact key).
    // Otherwise (the 16-slot instance, E > 8 warp) the exact key and s of every slot: the
    // estimates' extra registers cost that instance a wave per SIMD on AMD (141 VGPRs, 3
    // waves; 4 needed).
    float x_reg[kPerLane];
    float ce_reg[kPerLane];
    uint64_t key[kPerLane];
    float s_reg[kPerLane];
    float lane_max_ce = f32_from_bits(0xff800000u);  // the lane's best ce (kEstimate)
    uint32_t lane_max = 0;                            // the lane's best order word (otherwise)
    if constexpr (kEstimate) {
      // Every load first, none under a branch (a slot past E reads expert E - 1 of the
      // row, in bounds, and is then marked NaN), so all 2 kPerLane reads are in flight at
      // once instead of one slot's load -> estimate -> next load.
      float b_reg[kPerLane];
      if (experts == kPerLane * ws && !logits_bf16) {  // warp-uniform
        // Dense rows (every slot a real expert, fp32 logits; HY V4's E = 256): one row
        // pointer and fixed offsets, no clamp, no past-E select.
        const float* x_row = static_cast<const float*>(logits) + t * logits_stride + lane;
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          x_reg[j] = x_row[j * ws];
          b_reg[j] = bias[j * ws + lane];
        }
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          const float ce = dev::fast_sigmoid(x_reg[j]) + b_reg[j];
          ce_reg[j] = is_nan_f32(ce) ? f32_from_bits(0xff800000u) : ce;
          lane_max_ce = lane_max_of(lane_max_ce, ce_reg[j]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          const int e = j * ws + lane < experts ? j * ws + lane : experts - 1;
          x_reg[j] = load_logit(logits, logits_bf16, logits_stride, t, e);
          b_reg[j] = bias[e];
        }
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) {
          const float ce = dev::fast_sigmoid(x_reg[j]) + b_reg[j];
          ce_reg[j] = j * ws + lane >= experts ? f32_from_bits(0x7fc00000u)  // past E: never competes
                      : is_nan_f32(ce)         ? f32_from_bits(0xff800000u)
                                               : ce;
          lane_max_ce = ce_reg[j] > lane_max_ce ? ce_reg[j] : lane_max_ce;
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {
        const int e = j * ws + lane;
        key[j] = 0;  // slots past E never compete
        s_reg[j] = 0.0f;
        if (e < experts) key[j] = expert_key(logits, logits_bf16, logits_stride, bias, t, e, &s_reg[j]);
        lane_max = key_order(key[j]) > lane_max ? key_order(key[j]) : lane_max;
      }
    }
    // The filter (min(E, ws) >= k lanes hold an expert, so the floor is a real expert's
    // value, at or above every lane without one: -inf, or order word 0).
    float threshold = 0.0f;
    uint32_t floor_word = 0;
    if constexpr (kEstimate)
      threshold = candidate_threshold(kth_largest_over_lanes(lane_max_ce, k, lane));
    else
      floor_word = kth_largest_over_lanes(lane_max, k, lane);
    // The candidates get list positions by ballots, slot by slot, and their logit and id
    // are written to the list as they come; a lane with no candidate in the slot (or one
    // past position ws: the fallback below does not use the list) stores to its spare entry
    // ws + lane instead, so a step has no branch.  (Without kEstimate the keys and s
    // themselves, under a branch.)
    // (H100, topk.warp-list-without-branches: x0.89 at T = 512, x0.93 at 4096 - 32768.)
    int n = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const bool c = kEstimate ? ce_reg[j] >= threshold : key_order(key[j]) >= floor_word;
      const uint64_t b = dev::ballot(c);
      const int pos = n + __builtin_popcountll(b & below);
      if constexpr (kEstimate) {
        const int slot = c && pos < ws ? pos : ws + lane;  // ws + lane: the lane's spare entry, never read
        cand_s[cbase + slot] = x_reg[j];
        cand_e[cbase + slot] = j * ws + lane;
      } else if (c && pos < ws) {  // the 16-slot instance: no spare entries
        cand_key[cbase + pos] = key[j];
        cand_s[cbase + pos] = s_reg[j];
      }
      n += __builtin_popcountll(b);
    }
    if (n <= ws) {  // warp-uniform: the list holds every candidate
      dev::sync_warp();
      if constexpr (kEstimate) {
        if (lane < n) {  // candidate `lane`'s exact key and s (lane owns list entry `lane`)
          float sv;
          const int e = cand_e[cbase + lane];
          cand_key[cbase + lane] = exact_key(cand_s[cbase + lane], bias[e], e, &sv);
          cand_s[cbase + lane] = sv;
        }
        dev::sync_warp();
      }
      if (lane < n) {  // candidate `lane`'s rank = the candidates with a larger key (keys are unique)
        const uint64_t mine = cand_key[cbase + lane];
        int rank = 0;
        for (int i = 0; i < n; ++i) rank += cand_key[cbase + i] > mine ? 1 : 0;
        if (rank < k) {  // the k best are all candidates, so ranks 0 .. k-1 are all filled
          rank_key_of[rbase + rank] = mine;
          rank_s[rbase + rank] = cand_s[cbase + lane];
        }
      }
      dev::sync_warp();
      write_ranked_row(rank_s, rank_key_of, rbase, k, lane, renormalize, rsf, w_row, id_row);
      dev::sync_warp();  // the lists are rewritten by the warp's next row
      continue;
    }
    // More than ws candidates (many ties at the floor): (kEstimate: the exact keys of
    // every slot, then) k rounds over sorted lanes.
    if constexpr (kEstimate) {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {
        const int e = j * ws + lane;
        key[j] = 0;  // slots past E never compete
        s_reg[j] = 0.0f;
        if (e < experts) key[j] = exact_key(x_reg[j], bias[e], e, &s_reg[j]);
      }
    }
    // Sort the lane's slots by key, descending (bitonic network, fully unrolled: the
    // indices are compile-time, so everything stays in registers).  A lane's head is
    // then its best untaken expert.
#pragma unroll
    for (int size = 2; size <= kPerLane; size *= 2)
#pragma unroll
      for (int stride = size / 2; stride > 0; stride /= 2)
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          const int j = i ^ stride;
          if (j > i) {
            const bool descending = (i & size) == 0;
            if (descending == (key[i] < key[j])) {
              const uint64_t tk = key[i];
              key[i] = key[j];
              key[j] = tk;
              const float ts = s_reg[i];
              s_reg[i] = s_reg[j];
              s_reg[j] = ts;
            }
          }
        }
    int my_id = -1;  // rank `lane`'s expert (lanes < k)
    float my_s = 0.0f;
    // Kept rolled: NVVM unrolled these rounds by four (85 butterfly shuffles in the PTX
    // instead of 25), code the bench's rows never run, and the rolled loop is x0.98 / 0.95
    // at T = 8192 / 32768, x1.01 at 4096 (H100: topk.warp-fallback-rounds-not-unrolled); the
    // H200 agreed (x0.98 / 0.96, x1.03 at 4096: docs/MEASUREMENTS.md, twenty-third session).
#pragma unroll 1
    for (int r = 0; r < k; ++r) {
      uint64_t best = key[0];
      // (A compile-time count with a guard, for (b = 5 .. 0) if ((1 << b) < ws), which clang
      // can unroll on the CPU too, made the CUDA warp path x1.38 - 1.87 slower at T >= 512 on
      // an H100: docs/MEASUREMENTS.md, twenty-second session, call 5.)
      HY4_UNROLL_OVER_WARP
      for (int m = ws / 2; m > 0; m /= 2) best = max_key(best, dev::shfl_xor(best, m));
      const int best_id = key_id(best);
      const int owner = best_id % ws;
      const float s_sel = dev::shfl_idx(s_reg[0], owner);
      if (lane == owner) {  // pop the head
#pragma unroll
        for (int j = 0; j + 1 < kPerLane; ++j) {
          key[j] = key[j + 1];
          s_reg[j] = s_reg[j + 1];
        }
        key[kPerLane - 1] = 0;
      }
      if (lane == r) {
        my_id = best_id;
        my_s = s_sel;
      }
    }
    // sum in rank order: every lane adds the same values in the same order
    float sum = dev::shfl_idx(my_s, 0);
    for (int r = 1; r < k; ++r) sum = sum + dev::shfl_idx(my_s, r);
    const float scale = row_scale(sum, renormalize, rsf);
    if (lane < k) {
      w_row[lane] = routed_weight(my_s, scale);
      id_row[lane] = my_id;
    }
  }
}


// Block per row (decode): what one warp's chain did in k rounds, E threads do at once.
//  - Thread e (blockDim = the power of two >= E, 64 .. 512) reads, first thing in the
//    kernel, its first row's logit, expert e's bias (once) and the device row count (once),
//    so the three reads overlap each other and the block's setup arithmetic; later rows
//    read their logit at the top of the pass.  It forms s and its rank key (threads past
//    E hold key = lane: below every real key, distinct within the warp).
//  - Thread e also writes s to shared memory (s_of[e]: read back by a winner's id) and
//    its key's 32-bit order word (warp_words[e]).  Each lane counts the keys of its warp
//    above its own: 32 or 64 independent shared reads and compares of order words, a tie
//    going to the lower lane (the lower id, the larger key), where a bitonic network over
//    the lanes was 15 dependent 64-bit shuffle steps (21 at wave64).  (Order words in place
//    of the 64-bit keys: half the shared reads; H100, topk.block-warp-rank-by-order-words:
//    x0.94 / 0.95 / 0.95 at T = 1 / 8 / 64.  The tie-break as predicates, (w > word) |
//    (w == word & j < my place), not as (j < my place) added to w: H100,
//    topk.block-warp-rank-tie-by-predicates, x0.98 - 0.99 in two calls; then one 64-bit
//    compare of (word, ~place): x0.98, topk.block-warp-rank-wide-compare.)  A key of warp
//    rank r < kk = min(k, ws) is written to candidate slot r (the ranks are distinct:
//    lanes past E, all word 0, rank by lane too).
//    The k best of the row are among the candidates (a warp's experts beyond its kk best
//    lose to those kk).
//  - Candidate i's rank = the candidates with a larger key, counted by P adjacent threads
//    (P a power of two: nt / candidates; each reads its keys in batches of 16, so at HY
//    V4's 16 keys a thread one round trip; where 16 P divides the candidates every batch
//    is full and unclamped, elsewhere the index is clamped in bounds) and summed by
//    shuffles; rank < k writes (key, s_of[id]) to rank slot.
//  - Warp 0: lane r < k takes rank r; every lane sums the k s values in rank order (the
//    bit model's order), lane r writes weight and id r.
// Bounded by the reads, the exact sigmoid, the warp count and three barriers per row;
// rows past the grid cap are reached by a grid-stride loop.  (H100, twelfth session: the
// reads before the row count and the count in place of the network took T = 1 / 8 / 64
// from 2.96 / 3.02 / 3.10 to 2.68 / 2.76 / 2.85 us.  Thirteenth session, H100: ncu found
// 16 % of the T = 1 samples before the first read was issued; the reads at the kernel's top
// then took 2.69 / 2.75 / 2.87 to 2.53 / 2.58 / 2.69 us, topk.block-reads-at-kernel-top.)
// Where the chain goes (H100, twenty-seventh session, T = 1 / 64): exact keys with no
// selection 1.43 / 1.60 us; with one barrier and warp 0's row sum, the least any block per
// row needs, 1.63 / 1.80; the whole chain 2.36 / 2.53, so the two rank stages and their
// barrier are 0.73 (topk.probe-block-one-exchange, -keys-only, -no-warp-rank).  Candidates
// by a threshold (the least of the 32-expert groups' maxima, a shared counter) were x1.08.
constexpr int kMaxCandidates = 512;  // 16 warps x 32 (k <= 32, warps <= 512 / 32)

__global__ void HY4_LAUNCH_BOUNDS(512) topk_row_block_kernel(const void* logits, int logits_bf16, int64_t logits_stride, const float* bias,
                            int64_t rows, int experts, int k, int renormalize, float rsf, const int32_t* num_rows,
                            float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride) {
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int e = tid, e_read = e < experts ? e : experts - 1;  // threads past E read expert E - 1
  // The first row's reads go out before any other work (the block's arithmetic below then
  // runs under their latency): expert e's logit, its bias (the same for every row), the
  // device row count (a padded row's stale logit is read and dropped; every row t < rows
  // is inside the view).
  int64_t t = blockIdx.x;
  float x = t < rows ? load_logit(logits, logits_bf16, logits_stride, t, e_read) : 0.0f;
  const float b = bias[e_read];
  const int64_t real_rows = device_row_count(num_rows, rows);
  const int ws = dev::warp_size(), lane = dev::lane_id(), warp = tid / ws, warps = nt / ws;
  const int my_pos = tid - warp * ws;  // my place in the warp's list of words (= lane)
  const int kk = k < ws ? k : ws;
  const int nc = warps * kk;  // candidates
  // threads per candidate: parts = 2^parts_log2, the largest power of two at most nt / nc and ws
  int parts_log2 = 0;
  while ((2 << parts_log2) * nc <= nt && (2 << parts_log2) <= ws) ++parts_log2;
  const int parts = 1 << parts_log2;
  HY4_SHARED_UPTO(uint64_t, cand_key, kMaxCandidates, nc);
  HY4_SHARED_UPTO(float, s_of, 512, nt);  // s of expert e (thread e), read back by the key's id
  HY4_SHARED_UPTO(uint32_t, warp_words, 512, nt);  // order word of thread e's key, read by its warp
  HY4_SHARED_UPTO(uint64_t, rank_key_of, TopkPlan::kMaxK, k);
  HY4_SHARED_UPTO(float, rank_s, TopkPlan::kMaxK, k);
  for (; t < rows; t += gridDim.x) {
    float* w_row = weights + t * weights_stride;
    int32_t* id_row = ids + t * ids_stride;
    if (t != blockIdx.x) x = load_logit(logits, logits_bf16, logits_stride, t, e_read);  // later rows
    if (t >= real_rows) {  // graph-padded row
      if (tid < k) {
        w_row[tid] = 0.0f;
        id_row[tid] = -1;
      }
      continue;
    }
    uint64_t key = static_cast<uint64_t>(lane);  // past E: below every real key, distinct per lane
    float sv = 0.0f;
    if (e < experts) key = exact_key(x, b, e, &sv);
    s_of[tid] = sv;
    // The warp's kk best: a key's rank in its warp = the warp's keys above it (all keys
    // distinct), counted from shared memory; rank < kk is candidate slot rank.
    const uint32_t word = key_order(key);
    warp_words[tid] = word;
    // (word desc, place asc) as one 64-bit compare: (word_j, ~j) > (word, ~my_pos) (x0.98 alone,
    // topk.block-warp-rank-wide-compare; three compares a word before).
    const uint64_t mine_w = (static_cast<uint64_t>(word) << 32) | static_cast<uint32_t>(~my_pos);
    dev::sync_warp();
    int wrank = 0;
#pragma unroll 8
    for (int j = 0; j < ws; ++j) {
      const uint64_t wj = (static_cast<uint64_t>(warp_words[warp * ws + j]) << 32) | static_cast<uint32_t>(~j);
      wrank += wj > mine_w ? 1 : 0;
    }
    if (wrank < kk) cand_key[warp * kk + wrank] = key;
    dev::sync_block();
    const int i = tid >> parts_log2, part = tid & (parts - 1);
    int rank = 0;
    uint64_t mine = 0;
    if (i < nc) {
      mine = cand_key[i];
      // Batches of 16 reads in flight (the trip count, nc / parts = 16 at HY V4, is not
      // known to the compiler).  H200: unroll 8 took T = 1 from 3.07 to 2.96 us; H100:
      // batches of 16, one at HY V4, x0.98 (topk.block-candidate-rank-16-in-flight).
      // Two sides: where 16 x parts (a power of two) divides nc, every batch is full and
      // its reads need no clamp and no bound test (HY V4 at warp 32: nc 64, parts 4; at
      // wave64 with k = 16: nc 128, parts 4); elsewhere (HY V4 at wave64: nc 32, parts 8)
      // a read past nc reads key `part` and is not counted.  The full-batch side with the
      // one-compare warp rank above: H100, T = 1 / 8 / 64, 2.38 / 2.42 / 2.53 -> 2.26 /
      // 2.30 / 2.41 us (x0.95; topk.block-both-ranks-lean, thirty-third session).
      if ((nc & (16 * parts - 1)) == 0) {
        for (int j0 = part; j0 < nc; j0 += 16 * parts) {
#pragma unroll
          for (int u = 0; u < 16; ++u) rank += cand_key[j0 + u * parts] > mine ? 1 : 0;
        }
      } else {
        for (int j0 = part; j0 < nc; j0 += 16 * parts) {
#pragma unroll
          for (int u = 0; u < 16; ++u) {
            const int j = j0 + u * parts;
            const uint64_t kj = cand_key[j < nc ? j : part];
            rank += j < nc && kj > mine ? 1 : 0;
          }
        }
      }
    }
    for (int m = 1; m < parts; m *= 2) rank += dev::shfl_xor(rank, m);
    if (i < nc && part == 0 && rank < k) {
      rank_key_of[rank] = mine;
      rank_s[rank] = s_of[key_id(mine)];
    }
    dev::sync_block();
    if (warp == 0) write_ranked_row<true>(rank_s, rank_key_of, 0, k, lane, renormalize, rsf, w_row, id_row);
    dev::sync_block();  // the shared candidates are rewritten by the next row
  }
}

}  // namespace

void TopkPlan::launch(hy4::rt::Stream stream) const {
  if (args_.logits.rows == 0) return;
#define HY4_TOPK_LAUNCH(kernel, threads)                                                                         \
  HY4_LAUNCH(kernel, dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(threads)), stream,           \
             static_cast<const void*>(args_.logits.data), args_.logits.dtype == DType::BF16 ? 1 : 0,            \
             args_.logits.row_stride, args_.bias, args_.logits.rows, static_cast<int>(args_.logits.cols), args_.k, \
             args_.renormalize ? 1 : 0, args_.routed_scaling_factor, args_.num_rows,                            \
             static_cast<float*>(args_.weights.data), args_.weights.row_stride,                                 \
             static_cast<int32_t*>(args_.ids.data), args_.ids.row_stride)
  const int warp = hy4::rt::warp_size();
  const int slots = block_per_row_ ? 0 : slots_per_lane(args_.logits.cols, warp);
  const int64_t grid = block_per_row_ ? row_block_grid_ : warp_path_grid(args_.logits.rows, warp);
  if (block_per_row_)
    HY4_TOPK_LAUNCH(topk_row_block_kernel, row_block_threads(args_.logits.cols));
  else if (slots == 4)
    HY4_TOPK_LAUNCH(topk_kernel<4>, kBlockThreads);
  else if (slots == 8)
    HY4_TOPK_LAUNCH(topk_kernel<8>, kBlockThreads);
  else
    HY4_TOPK_LAUNCH(topk_kernel<16>, kBlockThreads);
#undef HY4_TOPK_LAUNCH
}

}  // namespace hy4
