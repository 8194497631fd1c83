// gate: fused BF16 MLA output gate (SPEC section 1).
//   out[t, i] = bf16( float(attn[t, i]) * float( bf16(sigmoid_f32(float(gate[t, i]))) ) )
// The sigmoid is rounded to bf16 before the product, as eager PyTorch's
// `attn_out * torch.sigmoid(gate_score)` does.  out may be attn itself (in place).
// Every row 0..T-1 is written (graph-padded rows too: the op is elementwise, so a
// stale row only produces its own stale result); nothing between rows is touched.
#pragma once

#include "op_common.h"
#include "platform/runtime.h"

namespace hy4 {

struct GateArgs {
  MatrixView attn;  // [T, W] bf16
  MatrixView gate;  // [T, W] bf16
  MatrixView out;   // [T, W] bf16
};

// Dense [T, W] views of three device buffers (row stride W).
inline GateArgs dense_gate_args(uint16_t* attn, uint16_t* gate, uint16_t* out, int64_t T, int64_t W) {
  GateArgs a;
  a.attn = MatrixView{attn, DType::BF16, T, W, W};
  a.gate = MatrixView{gate, DType::BF16, T, W, W};
  a.out = MatrixView{out, DType::BF16, T, W, W};
  return a;
}

class GatePlan {
 public:
  static constexpr int64_t kMaxRows = int64_t{1} << 24;
  static constexpr int64_t kMaxWidth = int64_t{1} << 24;
  static constexpr int64_t kMaxStride = int64_t{1} << 30;
  static constexpr int kVector = 8;  // bf16 per 16-byte vector access
  static constexpr int64_t kMaxGrid = 65535;  // blocks; rows past it are reached by the grid-stride loop
  // From this many rows on, a block takes two rows per pass (grid = ceil(T / 2)).
  static constexpr int64_t kPairFromRows = 1024;
  // Below this many rows gate_decode_kernel runs: a row is cut into slices of
  // kSliceThreads threads (grid y), so a decode batch's loads are spread over more SMs
  // than one block per row reaches.  32 threads: a 2048-wide row on eight SMs (H200, T = 1:
  // 1.44 -> 1.39 us against 64 threads; T = 8 1.52 -> 1.50; gate.decode-slices-of-32-threads).
  static constexpr int64_t kSliceBelowRows = 16;
  static constexpr int kSliceThreads = 32;

  // Validates everything; throws ArgumentError naming the argument and the limit.
  explicit GatePlan(const GateArgs& args);

  // Enqueues the kernel on the stream (nothing when T == 0).  Graph-capturable.
  void launch(hy4::rt::Stream stream) const;

  const GateArgs& args() const { return args_; }
  bool vector_path() const { return vector_; }
  int block_threads() const { return block_; }
  int64_t grid_blocks() const { return grid_; }
  int64_t grid_slices() const { return slices_; }  // blocks per row (grid y)
  // s = bf16(sigmoid_f32(g)) for every bf16 pattern g (65536 entries) on the device
  // the plan was made on.  See sigmoid_table() below.
  const uint16_t* sigmoid_table() const { return table_; }

 private:
  GateArgs args_;
  const uint16_t* table_ = nullptr;
  bool vector_ = false;  // rows start 16-byte aligned: 8-wide loads for the prefix, scalar tail
  int block_ = 64;
  int64_t grid_ = 0;
  int64_t slices_ = 1;
};

// The gate's sigmoid table of the current device: 65536 bf16 entries, entry g =
// bf16_from_f32(sigmoid_f32(bf16_to_f32(g))), computed on the host with the same
// hy4_numeric.h functions the kernel used to evaluate (host bits == device bits over
// all 2^32 inputs: the exhaustive numeric test), so replacing the arithmetic by a
// lookup changes no bit.  Made once per device by the first GatePlan there (a device
// allocation and a synchronous copy on a private stream: build the first plan outside
// a stream capture), kept for the life of the process, read-only afterwards - so any
// plan, eager or captured, may use it and a plan destroyed right after launch() is safe.
const uint16_t* gate_sigmoid_table();

}  // namespace hy4
