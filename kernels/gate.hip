// gate.hip: the fused BF16 MLA output gate kernel, one source for HIP, CUDA and the
// CPU executor (see gate.h for the contract).
//
// Design.  Two kernels.  Below GatePlan::kSliceBelowRows rows (decode) gate_decode_kernel:
// each row cut into slices of GatePlan::kSliceThreads (32) threads along grid y (more SMs
// per row), one vector per thread and pass, nothing else.  From there gate_kernel: one block per row below
// GatePlan::kPairFromRows rows, one per two rows from there (a pass takes rows t and t +
// gridDim.x, both rows' loads issued first), grid-stride past GatePlan::kMaxGrid blocks.
// Block: 64..256 threads, enough that each thread takes about one 16-byte vector of the
// row (8 bf16 of attn and gate, 8 results) on the vector path, or one element on the
// scalar path (unaligned rows), plus the scalar tail.  Per element: s from the 128 KiB
// sigmoid table (L1/L2 resident after the first rows; gate_sigmoid_table), one fp32
// product, one bf16 rounding.  Bounded by memory: attn and gate read once, out written
// once (in place: attn is out); no shared memory, no barrier.
//
// AMD budget (tools/hy4_amd_budget.py --check, the amd.budget test): a stream of 16-byte
// loads needs several waves per SIMD in flight to cover HBM latency; 4 is the floor the
// design accepts (it has 7: 49 VGPRs, 98 SGPRs - SGPR-bound - no LDS; gfx942 and gfx950).
// AMD budget: gate_kernel >= 4 waves/SIMD
// AMD budget: gate_decode_kernel >= 4 waves/SIMD
#include <map>
#include <mutex>
#include <vector>

#include "gate.h"
#include "platform/hy4_numeric.h"
#include "platform/hy4_platform.h"

namespace hy4 {
namespace {

// s = bf16(sigmoid_f32(g)) is one of 65536 values: a lookup in the table of
// gate_sigmoid_table() (made with the same sigmoid_f32, so the same bits), then the
// product, one IEEE rounding.  The arithmetic sigmoid (exp_f32, ~40 dependent flops
// per element, 8 per thread) was a serial chain that set the kernel's time at small T
// and its throughput at large T.  A branch-free fmaf sequence (no division, no branch;
// bf16-exact against sigmoid_f32 over all 65536 inputs) was slower too: H200, x1.05 / 1.10
// at T = 1 / 512 and x1.4 - 1.6 from 4096 on - about 40 instructions per element make the
// kernel issue-bound (docs/MEASUREMENTS.md, twenty-third session; the version that computes
// s below 4096 rows only: docs/candidates/gate-computed-s.patch).
HY4_DEVICE inline uint16_t gate_one(uint16_t a, uint16_t g, const uint16_t* table) {
  return bf16_from_f32(bf16_to_f32(a) * bf16_to_f32(table[g]));
}

using dev::Bf16x8;

// One 16-byte vector: eight gate_one, the unit of the vector path in both kernels.
HY4_DEVICE inline Bf16x8 gate_vector(const Bf16x8& a, const Bf16x8& g, const uint16_t* table) {
  Bf16x8 o;
#pragma unroll
  for (int j = 0; j < 8; ++j) o.v[j] = gate_one(a.v[j], g.v[j], table);
  return o;
}

// Rows are spread over blocks (grid-stride); a block takes two rows per pass, t and
// t + gridDim.x, and loads both rows' vectors before computing either, so each thread
// has two 16-byte load pairs in flight (the plan halves the grid from
// GatePlan::kPairFromRows rows on; below it the second row is past T and skipped).
// Inside a row, threads take 8-wide vectors for the aligned prefix (when the plan
// found every row start 16-byte aligned) and single elements for the tail.
__global__ void HY4_LAUNCH_BOUNDS(256) gate_kernel(const uint16_t* attn, int64_t attn_stride,
                            const uint16_t* gate, int64_t gate_stride, uint16_t* out,
                            int64_t out_stride, int64_t rows, int64_t width, int vector,
                            const uint16_t* __restrict__ table) {
  const int64_t first = threadIdx.x, step = blockDim.x;  // this thread's first unit of a row, the stride
  // The first pass needs no bounds check: the plan's grid is at most the rows (half of them
  // from kPairFromRows), so blockIdx.x < rows, and the first loads wait on no read of `rows`
  // (a do-while; H100, thirteenth session: T = 64 / 512 2.14 / 3.72 -> 2.09 / 3.65 us,
  // gate.first-row-without-bounds-check).
  int64_t t = blockIdx.x;
  do {
    const int64_t t2 = t + gridDim.x;
    const bool two = t2 < rows;  // the same for the whole block
    const uint16_t* a = attn + t * attn_stride;
    const uint16_t* g = gate + t * gate_stride;
    uint16_t* o = out + t * out_stride;
    const uint16_t* a2 = attn + (two ? t2 : t) * attn_stride;
    const uint16_t* g2 = gate + (two ? t2 : t) * gate_stride;
    uint16_t* o2 = out + (two ? t2 : t) * out_stride;
    int64_t tail_begin = 0;
    if (vector) {
      const int64_t nvec = width / 8;
      for (int64_t i = first; i < nvec; i += step) {
        const Bf16x8 av = reinterpret_cast<const Bf16x8*>(a)[i];
        const Bf16x8 gv = reinterpret_cast<const Bf16x8*>(g)[i];
        Bf16x8 av2, gv2;
        if (two) {
          av2 = reinterpret_cast<const Bf16x8*>(a2)[i];
          gv2 = reinterpret_cast<const Bf16x8*>(g2)[i];
        }
        reinterpret_cast<Bf16x8*>(o)[i] = gate_vector(av, gv, table);
        if (two) reinterpret_cast<Bf16x8*>(o2)[i] = gate_vector(av2, gv2, table);
      }
      tail_begin = nvec * 8;
    }
    for (int64_t i = tail_begin + first; i < width; i += step) o[i] = gate_one(a[i], g[i], table);
    if (two)
      for (int64_t i = tail_begin + first; i < width; i += step) o2[i] = gate_one(a2[i], g2[i], table);
    t += 2 * static_cast<int64_t>(gridDim.x);
  } while (t < rows);
}

// Decode (T < GatePlan::kSliceBelowRows): gate_decode_kernel.  Grid x = the row, y = its
// slices of kSliceThreads threads (one slice per 256 elements: a row of 2048 is eight blocks
// on eight SMs instead of one; H200, still in gate_kernel with 64-thread slices, four
// blocks: 1.70 -> 1.55 us at T = 1; see gate.h for 32 against 64); a thread takes
// one 16-byte vector of its row (or one element: unaligned rows and the tail) per slice
// pass, so its chain is load (attn, gate) -> eight table gathers -> store, with none of
// gate_kernel's row pairs or row loop.  H200 hy4-bench: T = 1 1.54 -> 1.40 us, T = 8 1.62
// -> 1.48 (the same shapes through gate_kernel's sliced path).  (Tried and not kept: the
// table's window of non-constant s, 8 KiB, copied into shared memory by every block while
// its attn and gate loads fly, to drop the gathers' L2 latency: 2.19 us at T = 1.)
__global__ void HY4_LAUNCH_BOUNDS(GatePlan::kSliceThreads) gate_decode_kernel(
    const uint16_t* attn, int64_t attn_stride, const uint16_t* gate, int64_t gate_stride, uint16_t* out,
    int64_t out_stride, int64_t width, int vector, const uint16_t* __restrict__ table) {
  const int64_t t = blockIdx.x;
  // The plan launches kSliceThreads threads: a constant here, so that no read of the launch
  // parameters stands before the first load's address (H100: T = 1 / 8 1.44 / 1.70 -> 1.40 /
  // 1.65 us, against blockDim.x).
  const int64_t first = static_cast<int64_t>(blockIdx.y) * GatePlan::kSliceThreads + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.y) * GatePlan::kSliceThreads;
  const uint16_t* a = attn + t * attn_stride;
  const uint16_t* g = gate + t * gate_stride;
  uint16_t* o = out + t * out_stride;
  const int64_t nvec = vector ? width / 8 : 0;
  for (int64_t i = first; i < nvec; i += step) {
    const Bf16x8 av = reinterpret_cast<const Bf16x8*>(a)[i];
    const Bf16x8 gv = reinterpret_cast<const Bf16x8*>(g)[i];
    reinterpret_cast<Bf16x8*>(o)[i] = gate_vector(av, gv, table);
  }
  for (int64_t i = nvec * 8 + first; i < width; i += step) o[i] = gate_one(a[i], g[i], table);
}

}  // namespace

void GatePlan::launch(hy4::rt::Stream stream) const {
  if (args_.attn.rows == 0) return;
  if (args_.attn.rows < kSliceBelowRows) {
    HY4_LAUNCH(gate_decode_kernel, dim3(static_cast<unsigned>(grid_), static_cast<unsigned>(slices_)),
               dim3(static_cast<unsigned>(block_)), stream,
               static_cast<const uint16_t*>(args_.attn.data), args_.attn.row_stride,
               static_cast<const uint16_t*>(args_.gate.data), args_.gate.row_stride,
               static_cast<uint16_t*>(args_.out.data), args_.out.row_stride, args_.attn.cols, vector_ ? 1 : 0,
               table_);
    return;
  }
  HY4_LAUNCH(gate_kernel, dim3(static_cast<unsigned>(grid_)),
             dim3(static_cast<unsigned>(block_)), stream,
             static_cast<const uint16_t*>(args_.attn.data), args_.attn.row_stride,
             static_cast<const uint16_t*>(args_.gate.data), args_.gate.row_stride,
             static_cast<uint16_t*>(args_.out.data), args_.out.row_stride, args_.attn.rows, args_.attn.cols,
             vector_ ? 1 : 0, table_);
}

const uint16_t* gate_sigmoid_table() {
  static const std::vector<uint16_t> host = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t g = 0; g < 65536; ++g)
      t[g] = bf16_from_f32(sigmoid_f32(bf16_to_f32(static_cast<uint16_t>(g))));
    return t;
  }();
  static std::mutex mu;
  // Never destroyed (a static std::map would free its nodes at exit, and LeakSanitizer
  // would then report the tables, which live as long as the process, as leaks).
  static auto* per_device = new std::map<int, uint16_t*>();
  const int dev = hy4::rt::current_device();
  std::lock_guard<std::mutex> lk(mu);
  uint16_t*& d = (*per_device)[dev];
  if (!d) {
    d = static_cast<uint16_t*>(hy4::rt::malloc_device(host.size() * sizeof(uint16_t)));
    hy4::rt::Stream s = hy4::rt::create_stream();
    hy4::rt::copy_to_device(d, host.data(), host.size() * sizeof(uint16_t), s);
    hy4::rt::synchronize(s);
    hy4::rt::destroy_stream(s);
  }
  return d;
}

}  // namespace hy4
