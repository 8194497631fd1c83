// sink.hip: the grouped attention-sink kernel with empty-row repair, one source for
// HIP, CUDA and the CPU executor (see sink.h for the contract).
//
// Design.  Grid: x = sets of P tokens (P = tokens_per_block(T): 1 below 2048 tokens,
// then T / 1024 up to 4, and 2 from 5120 tokens on; grid-stride past SinkPlan::kMaxGrid),
// y = groups of G heads (the plan picks G so a block has about two units per thread and
// token: HY V4's 8 heads x 512 bf16 = 512 16-byte vectors per token, one block of 256
// threads; up to SinkPlan::kSpreadHeadsMaxTokens tokens half a unit per thread: 2 heads,
// four blocks per token, so a decode batch's chains run on four times the SMs).  Per set
// a block does two phases: every thread first reads its units of the P tokens' rows
// (16-byte vectors on the vector path, elements otherwise; units tid + j * 256 of each
// token's G head rows, at most SinkPlan::kRowSlotsVector / kRowSlotsScalar per token,
// kept in registers with their offsets made once per thread), then threads 0..P*G-1 each
// take one (token, head) (their kv_indptr, lse and sink loads issued first of all), form
// sink_lse and the scale with the project's exp_f32 / log_f32, write lse and leave (scale, active) in shared memory;
// after a barrier every thread scales the units it holds and writes them back, +0 for an
// empty row.  (Reading out first puts its loads in flight during the scalar phase: one
// dependent memory round trip fewer per set.)  A second barrier guards the shared
// slots before the next set.  The lse read and write of a head are one thread's, so
// there is no race.
// Bounded by: at one token per block, each block's dependent chain (the out read beside
// the scalar phase, the barrier, the write) with only as many blocks in flight as fit; P
// tokens per block amortise the chain and put P times the loads in flight (large T).  Memory: out is
// read and written once; the scale costs ~40 flops per head.
// AMD budget: streaming like the gate, 4 waves/SIMD at least (1 KiB of LDS).
// AMD budget: sink_kernel >= 4 waves/SIMD
#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"
#include "op_device.h"
#include "sink.h"

namespace hy4 {
namespace {

HY4_DEVICE inline bool is_inf_f32(float x) { return (f32_bits(x) & 0x7fffffffu) == 0x7f800000u; }

// The per-(t, h) scalar sequence of sink.h.  Returns active; writes sink_lse and scale.
HY4_DEVICE inline bool sink_scalars(int32_t begin, int32_t end, float lse, float sink, float* sink_lse,
                                    float* scale) {
  const float neg_inf = f32_from_bits(0xff800000u), pos_inf = f32_from_bits(0x7f800000u);
  const float nan = f32_from_bits(0x7fc00000u);
  const bool active = end > begin && !is_inf_f32(lse);
  const float safe = active ? lse : neg_inf;
  if (is_nan_f32(safe) || is_nan_f32(sink)) {
    *sink_lse = nan;
    *scale = nan;
  } else {
    const float m = safe > sink ? safe : sink;
    if (m == neg_inf) {
      *sink_lse = neg_inf;
      *scale = 0.0f;
    } else if (m == pos_inf) {
      *sink_lse = pos_inf;
      *scale = 0.0f;
    } else {
      // exp_f32(safe - m) + exp_f32(sink - m) with one exp: the larger term is exp_f32(0) =
      // 1 exactly and fp32 + commutes, so the sum is 1 + exp_f32(lo - m) bit for bit.
      const float lo = safe > sink ? sink : safe;
      const float l = m + log_f32(1.0f + exp_f32(lo - m));
      *sink_lse = l;
      *scale = exp_f32(safe - l);
    }
  }
  return active;
}

HY4_DEVICE inline uint16_t scale_one(uint16_t o, float s) { return bf16_from_f32(bf16_to_f32(o) * s); }
HY4_DEVICE inline float scale_one(float o, float s) {
  const float v = o * s;
  return is_nan_f32(v) ? f32_from_bits(0x7fc00000u) : v;
}

// r / units with no device division: small_div (op_device.h) with units_magic =
// small_div_magic(units), made by the plan.  An integer divide is about 30 instructions around
// a reciprocal, and the first loads' addresses waited on three of them (r / units for two
// slots, then the scalar thread's tid / g_count: the bf16 vector kernel issued its first load
// at instruction 200; sm_90 SASS, twenty-ninth session).  The scalar thread's token is
// counted by compares.  H100, with both: x0.96 - 0.99 from T = 1 to 4096, x1.00 at 8192 and
// 32768 (cand-sink-no-device-division, `ci/bench_variants.py --run out/v71.tar.xz --rounds 7`).
static_assert(SinkPlan::kMaxGroupHeads * SinkPlan::kMaxDim <= kSmallDivMaxDividend &&
                  SinkPlan::kMaxDim <= kSmallDivMaxDivisor,
              "small_div is exact for r < kMaxGroupHeads x kMaxDim and units <= kMaxDim");

// A unit of the scale phase: a 16-byte vector on the vector path, else one element.
template <class OutT, bool kVector>
struct SinkUnit { using type = dev::Vec<OutT, 16 / sizeof(OutT)>; };
template <class OutT>
struct SinkUnit<OutT, false> { using type = OutT; };

// A unit scaled by s, or +0 where the row is empty.
template <class OutT, int N>
HY4_DEVICE inline dev::Vec<OutT, N> scaled_unit(dev::Vec<OutT, N> v, bool active, float s) {
#pragma unroll
  for (int j = 0; j < N; ++j) v.v[j] = active ? scale_one(v.v[j], s) : OutT(0);
  return v;
}
HY4_DEVICE inline uint16_t scaled_unit(uint16_t o, bool active, float s) { return active ? scale_one(o, s) : uint16_t(0); }
HY4_DEVICE inline float scaled_unit(float o, bool active, float s) { return active ? scale_one(o, s) : 0.0f; }

template <class OutT, bool kVector>
__global__ void HY4_LAUNCH_BOUNDS(SinkPlan::kBlockThreads)
    sink_kernel(OutT* out, int64_t out_ts, int64_t out_hs, float* lse, int64_t lse_ts, int64_t lse_hs,
                const float* sinks, const int32_t* kv_indptr, int64_t tokens, int heads, int dim, int group,
                int per_block, uint32_t units_magic) {
  using UnitT = typename SinkUnit<OutT, kVector>::type;
  constexpr int kVec = 16 / sizeof(OutT);
  constexpr int kElems = kVector ? kVec : 1;  // elements per unit
  constexpr int kEarly = 1;  // tokens of a set read before the scalar phase
  constexpr int kSlots = kVector ? SinkPlan::kRowSlotsVector : SinkPlan::kRowSlotsScalar;  // the plan checks G x units fits
  HY4_SHARED(float, scale_s, SinkPlan::kMaxTokensPerBlock * SinkPlan::kMaxGroupHeads);
  HY4_SHARED(int, active_s, SinkPlan::kMaxTokensPerBlock * SinkPlan::kMaxGroupHeads);
  const int h0 = static_cast<int>(blockIdx.y) * group;
  const int g_count = heads - h0 < group ? heads - h0 : group;
  const int units = kVector ? dim / kVec : dim;
  const int tid = static_cast<int>(threadIdx.x);
  // This thread's units of a token's G head rows, r = tid + slot * blockDim (the same for
  // every token): head g = r / units, offset from the token's row start, valid or not.
  const int row_units = g_count * units;
  int64_t offset[kSlots];
  int head_of[kSlots];
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    const int r = tid + j * static_cast<int>(blockDim.x);
    const int g = r < row_units ? static_cast<int>(small_div(static_cast<uint32_t>(r), units_magic)) : -1;
    head_of[j] = g;
    offset[j] = g < 0 ? 0 : static_cast<int64_t>(h0 + g) * out_hs + static_cast<int64_t>(r - g * units) * kElems;
  }
  for (int64_t t0 = static_cast<int64_t>(blockIdx.x) * per_block; t0 < tokens;
       t0 += static_cast<int64_t>(gridDim.x) * per_block) {
    const int n_tok = tokens - t0 < per_block ? static_cast<int>(tokens - t0) : per_block;
    // Unit j of token t0 + dt, and its write-back (scaled, or +0 for an empty row).
    auto unit = [&](int dt, int j) { return reinterpret_cast<UnitT*>(out + (t0 + dt) * out_ts + offset[j]); };
    auto write_scaled = [&](int dt, int j, const UnitT& v) {
      const int slot = dt * g_count + head_of[j];
      *unit(dt, j) = scaled_unit(v, active_s[slot] != 0, scale_s[slot]);
    };
    // The first kEarly tokens' units of this thread are read before the scalar phase, so
    // the loads are in flight while it runs (a row found empty is read for nothing); the
    // other tokens' after the barrier, a token at a time, where other blocks cover the
    // wait.  (All four tokens early: 86 registers on sm_90, VGPR spills on gfx942.)
    // Before them, a scalar thread's own four loads (kv_indptr twice, lse, the sink): its
    // chain, loads -> exp / log / exp -> barrier, is the set's longest (H200, T = 1 / 8 /
    // 64: 2.01 / 2.13 / 2.31 -> 1.89 / 1.99 / 2.22 us; the exp / log / exp alone is 0.55 us
    // of T = 1, probe sink.probe-scalar-loads-no-math).
    const bool scalar_thread = tid < n_tok * g_count;  // (token, head) pair tid: at most 4 x 32 <= 256 threads
    int32_t kv_begin = 0, kv_end = 0;
    float lse_in = 0.0f, sink_in = 0.0f;
    float* l = lse;
    if (scalar_thread) {
      int dt = 0;  // tid / g_count by compares (tid < n_tok * g_count, n_tok <= kMaxTokensPerBlock)
#pragma unroll
      for (int q = 1; q < SinkPlan::kMaxTokensPerBlock; ++q) dt += tid >= q * g_count ? 1 : 0;
      const int g = tid - dt * g_count;
      l = lse + (t0 + dt) * lse_ts + (h0 + g) * lse_hs;
      kv_begin = kv_indptr[t0 + dt];
      kv_end = kv_indptr[t0 + dt + 1];
      lse_in = *l;
      sink_in = sinks[h0 + g];
    }
    UnitT pre[kEarly][kSlots];
#pragma unroll
    for (int dt = 0; dt < kEarly; ++dt)
#pragma unroll
      for (int j = 0; j < kSlots; ++j)
        if (dt < n_tok && head_of[j] >= 0) pre[dt][j] = *unit(dt, j);
    if (scalar_thread) {
      float sink_lse, scale;
      const bool active = sink_scalars(kv_begin, kv_end, lse_in, sink_in, &sink_lse, &scale);
      *l = sink_lse;
      scale_s[tid] = scale;
      active_s[tid] = active ? 1 : 0;
    }
    dev::sync_block();
#pragma unroll
    for (int dt = 0; dt < kEarly; ++dt)
#pragma unroll
      for (int j = 0; j < kSlots; ++j)
        if (dt < n_tok && head_of[j] >= 0) write_scaled(dt, j, pre[dt][j]);
    for (int dt = kEarly; dt < n_tok; ++dt) {  // the later tokens: read, scale, write
      UnitT late[kSlots];
#pragma unroll
      for (int j = 0; j < kSlots; ++j)
        if (head_of[j] >= 0) late[j] = *unit(dt, j);
#pragma unroll
      for (int j = 0; j < kSlots; ++j)
        if (head_of[j] >= 0) write_scaled(dt, j, late[j]);
    }
    dev::sync_block();
  }
}

}  // namespace

void SinkPlan::launch(hy4::rt::Stream stream) const {
  const SinkArgs& a = args_;
  if (a.out.tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(grid_x_), static_cast<unsigned>(grid_y_));
  const dim3 block(kBlockThreads);
  float* lse = static_cast<float*>(a.lse.data);
#define HY4_SINK_LAUNCH(T, V)                                                                                 \
  HY4_LAUNCH((sink_kernel<T, V>), grid, block, stream, static_cast<T*>(a.out.data), a.out.token_stride,       \
             a.out.head_stride, lse, a.lse.token_stride, a.lse.head_stride, a.sinks, a.kv_indptr, a.out.tokens, \
             static_cast<int>(a.out.heads), static_cast<int>(a.out.cols), group_, tokens_per_block(a.out.tokens),   \
             units_magic_)
  if (a.out.dtype == DType::BF16) {
    if (vector_) HY4_SINK_LAUNCH(uint16_t, true); else HY4_SINK_LAUNCH(uint16_t, false);
  } else {
    if (vector_) HY4_SINK_LAUNCH(float, true); else HY4_SINK_LAUNCH(float, false);
  }
#undef HY4_SINK_LAUNCH
}

}  // namespace hy4
