#include "topk_reference.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "platform/hy4_numeric.h"

namespace hy4::ref {
namespace {

Eigen::ArrayXf row_as_f32(const TopkInput& in, int64_t t) {
  if (in.bf16) {
    Eigen::Map<const Eigen::Array<uint16_t, Eigen::Dynamic, 1>> r(
        static_cast<const uint16_t*>(in.logits) + t * in.logits_stride, in.experts);
    return r.unaryExpr([](uint16_t h) { return bf16_to_f32(h); });
  }
  return Eigen::Map<const Eigen::ArrayXf>(static_cast<const float*>(in.logits) + t * in.logits_stride, in.experts);
}

}  // namespace

void topk_bit_model(const TopkInput& in, float* weights, int64_t weights_stride, int32_t* ids, int64_t ids_stride) {
  const Eigen::Map<const Eigen::ArrayXf> bias(in.bias, in.experts);
  std::vector<int> order(in.experts);
  for (int64_t t = 0; t < in.rows; ++t) {
    float* w = weights + t * weights_stride;
    int32_t* id = ids + t * ids_stride;
    if (t >= in.real_rows) {
      std::fill(w, w + in.k, 0.0f);
      std::fill(id, id + in.k, -1);
      continue;
    }
    const Eigen::ArrayXf s = row_as_f32(in, t).unaryExpr([](float x) { return sigmoid_f32(x); });
    Eigen::ArrayXf c = s + bias;
    c = c.unaryExpr([](float v) { return is_nan_f32(v) ? -INFINITY : v; });
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + in.k, order.end(),
                      [&](int a, int b) { return c[a] > c[b] || (c[a] == c[b] && a < b); });
    float sum = s[order[0]];
    for (int r = 1; r < in.k; ++r) sum = sum + s[order[r]];
    const float scale = in.renormalize ? in.rsf / (sum < 1e-20f ? 1e-20f : sum) : in.rsf;
    for (int r = 0; r < in.k; ++r) {
      const float v = s[order[r]] * scale;
      w[r] = is_nan_f32(v) ? f32_from_bits(0x7fc00000u) : v;
      id[r] = order[r];
    }
  }
}

void topk_math_scores(const TopkInput& in, double* s64, double* c64) {
  const Eigen::Map<const Eigen::ArrayXf> bias(in.bias, in.experts);
  for (int64_t t = 0; t < in.rows; ++t) {
    const Eigen::ArrayXd x = row_as_f32(in, t).cast<double>();
    // std::exp per element (Eigen's vectorised exp clamps its argument, which would
    // turn a NaN or an infinity into a finite value).
    const Eigen::ArrayXd s = x.unaryExpr([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    Eigen::Map<Eigen::ArrayXd>(s64 + t * in.experts, in.experts) = s;
    Eigen::Map<Eigen::ArrayXd>(c64 + t * in.experts, in.experts) = s + bias.cast<double>();
  }
}

}  // namespace hy4::ref
