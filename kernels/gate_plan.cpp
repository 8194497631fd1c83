// The gate op's plan: argument validation and launch shape (backend independent).
#include <algorithm>

#include "gate.h"

namespace hy4 {

GatePlan::GatePlan(const GateArgs& a) : args_(a) {
  const char* op = "gate";
  if (a.attn.rows < 0 || a.attn.rows > kMaxRows)
    check::fail(op, "argument 'attn' has " + std::to_string(a.attn.rows) + " rows; must be in [0, " +
                        std::to_string(kMaxRows) + "]");
  const int64_t T = a.attn.rows;
  const struct {
    const char* name;
    const MatrixView* v;
  } views[] = {{"attn", &a.attn}, {"gate", &a.gate}, {"out", &a.out}};
  for (const auto& nv : views) {
    check::dtype_is(op, nv.name, *nv.v, DType::BF16);
    check::shape(op, nv.name, *nv.v, T, nv.v == &a.attn ? 1 : a.attn.cols, nv.v == &a.attn ? kMaxWidth : a.attn.cols);
    check::stride(op, nv.name, *nv.v, kMaxStride);
    check::pointer(op, nv.name, *nv.v, 2);
  }
  check::no_partial_overlap(op, "out", a.out, "attn", a.attn);
  check::no_partial_overlap(op, "out", a.out, "gate", a.gate);

  const int64_t W = a.attn.cols;
  auto aligned = [](const MatrixView& v) {
    return reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && (v.rows <= 1 || v.row_stride % kVector == 0);
  };
  vector_ = W >= kVector && aligned(a.attn) && aligned(a.gate) && aligned(a.out);
  // One block per row (grid-stride over rows); threads cover a row in 8-wide vectors.
  const int64_t per_row = vector_ ? (W + kVector - 1) / kVector : W;
  block_ = static_cast<int>(std::clamp<int64_t>((per_row + 63) / 64 * 64, 64, 256));
  // One block per row, or per two rows from kPairFromRows on (two load pairs in flight per
  // thread); grid-stride past kMaxGrid.
  grid_ = std::min<int64_t>(T >= kPairFromRows ? (T + 1) / 2 : T, kMaxGrid);
  // Decode batches: blocks of kSliceThreads, a row's units cut over grid y.
  if (T < kSliceBelowRows) {
    block_ = kSliceThreads;
    slices_ = std::min<int64_t>((per_row + kSliceThreads - 1) / kSliceThreads, kMaxGrid);
  }
  if (T > 0) table_ = gate_sigmoid_table();
}

}  // namespace hy4
