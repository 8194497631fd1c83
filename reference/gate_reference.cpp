#include "gate_reference.h"

#include <Eigen/Core>
#include <cmath>

#include "platform/hy4_numeric.h"

namespace hy4::ref {
namespace {
using Bits = Eigen::Array<uint16_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstBitsMap = Eigen::Map<const Bits, 0, Eigen::OuterStride<>>;
using BitsMap = Eigen::Map<Bits, 0, Eigen::OuterStride<>>;
using F64 = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
}  // namespace

void gate_bit_model(const uint16_t* attn, int64_t attn_stride, const uint16_t* gate, int64_t gate_stride,
                    uint16_t* out, int64_t out_stride, int64_t rows, int64_t width) {
  if (rows == 0) return;
  ConstBitsMap a(attn, rows, width, Eigen::OuterStride<>(attn_stride));
  ConstBitsMap g(gate, rows, width, Eigen::OuterStride<>(gate_stride));
  BitsMap o(out, rows, width, Eigen::OuterStride<>(out_stride));
  o = a.binaryExpr(g, [](uint16_t av, uint16_t gv) {
    const float s = bf16_to_f32(bf16_from_f32(sigmoid_f32(bf16_to_f32(gv))));
    return bf16_from_f32(bf16_to_f32(av) * s);
  });
}

void gate_math(const uint16_t* attn, int64_t attn_stride, const uint16_t* gate, int64_t gate_stride, double* out,
               int64_t rows, int64_t width) {
  if (rows == 0) return;
  ConstBitsMap a(attn, rows, width, Eigen::OuterStride<>(attn_stride));
  ConstBitsMap g(gate, rows, width, Eigen::OuterStride<>(gate_stride));
  Eigen::Map<F64> o(out, rows, width);
  o = a.binaryExpr(g, [](uint16_t av, uint16_t gv) {
    const double x = static_cast<double>(bf16_to_f32(gv));
    const double s = 1.0 / (1.0 + std::exp(-x));
    return static_cast<double>(bf16_to_f32(av)) * s;
  });
}

}  // namespace hy4::ref
