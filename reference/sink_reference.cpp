#include "sink_reference.h"

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "platform/hy4_numeric.h"

namespace hy4::ref {
namespace {
bool active_of(const SinkInput& in, int64_t t, float lse) {
  return in.kv_indptr[t + 1] > in.kv_indptr[t] && !std::isinf(lse);
}
}  // namespace

// The sequence of kernels/sink.h, one (t, h) at a time.
void sink_bit_model(const SinkInput& in, void* out, float* lse) {
  const float ninf = -std::numeric_limits<float>::infinity(), pinf = std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < in.T; ++t)
    for (int64_t h = 0; h < in.H; ++h) {
      float& l = lse[t * in.lse_ts + h * in.lse_hs];
      const float sink = in.sinks[h];
      const bool active = active_of(in, t, l);
      const float safe = active ? l : ninf;
      float sink_lse, scale;
      if (std::isnan(safe) || std::isnan(sink)) {
        sink_lse = scale = f32_from_bits(0x7fc00000u);
      } else {
        const float m = std::max(safe, sink);
        if (m == ninf || m == pinf) {
          sink_lse = m;
          scale = 0.0f;
        } else {
          sink_lse = m + log_f32(exp_f32(safe - m) + exp_f32(sink - m));
          scale = exp_f32(safe - sink_lse);
        }
      }
      l = sink_lse;
      for (int64_t c = 0; c < in.D; ++c) {
        const int64_t k = t * in.out_ts + h * in.out_hs + c;
        if (in.out_bf16) {
          uint16_t& o = static_cast<uint16_t*>(out)[k];
          o = active ? bf16_from_f32(bf16_to_f32(o) * scale) : uint16_t{0};
        } else {
          float& o = static_cast<float*>(out)[k];
          const float v = o * scale;
          o = !active ? 0.0f : (std::isnan(v) ? f32_from_bits(0x7fc00000u) : v);
        }
      }
    }
}

void sink_math(const SinkInput& in, const void* out, const float* lse, double* out64, double* lse64,
               uint8_t* active64) {
  const double ninf = -std::numeric_limits<double>::infinity();
  Eigen::Map<Eigen::Array<double, Eigen::Dynamic, 1>> o64(out64, in.T * in.H * in.D);
  for (int64_t t = 0; t < in.T; ++t)
    for (int64_t h = 0; h < in.H; ++h) {
      const float l = lse[t * in.lse_ts + h * in.lse_hs];
      const bool active = active_of(in, t, l);
      const double safe = active ? static_cast<double>(l) : ninf;
      const double sink = in.sinks[h];
      double sl;
      if (std::isnan(safe) || std::isnan(sink)) sl = std::nan("");
      else if (safe == ninf && sink == ninf) sl = ninf;
      else if (std::isinf(sink) && sink > 0) sl = sink;
      else {
        const double m = std::max(safe, sink);
        sl = m + std::log1p(std::exp(std::min(safe, sink) - m));  // logaddexp
      }
      const double scale = std::isinf(sl) ? 0.0 : std::exp(safe - sl);  // sigmoid(lse - sink)
      lse64[t * in.H + h] = sl;
      active64[t * in.H + h] = active ? 1 : 0;
      for (int64_t c = 0; c < in.D; ++c) {
        const int64_t k = t * in.out_ts + h * in.out_hs + c;
        const double o = in.out_bf16 ? static_cast<double>(bf16_to_f32(static_cast<const uint16_t*>(out)[k]))
                                     : static_cast<double>(static_cast<const float*>(out)[k]);
        o64((t * in.H + h) * in.D + c) = active ? o * scale : 0.0;
      }
    }
}

}  // namespace hy4::ref
