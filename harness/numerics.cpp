#include "numerics.h"

#include <cmath>
#include <cstdio>

#include "platform/hy4_numeric.h"

namespace hy4::harness {

uint16_t bf16_from_f64(double x) {
  if (std::isnan(x)) return kBf16CanonicalNaN;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a == 0) return sign;
  if (std::isinf(a)) return sign | 0x7F80;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): leading bit at 2^(e-1)
  const int lead = std::max(e - 1, -126);
  const double quantum = std::ldexp(1.0, lead - 7);
  const double q = std::nearbyint(a / quantum) * quantum;  // ties to even
  if (q >= std::ldexp(1.0, 128)) return sign | 0x7F80;
  return sign | static_cast<uint16_t>(f32_bits(static_cast<float>(q)) >> 16);
}

static int64_t ordered16(uint16_t h) { return (h & 0x8000) ? -static_cast<int64_t>(h & 0x7FFF) : static_cast<int64_t>(h); }
int64_t bf16_ulp_distance(uint16_t a, uint16_t b) { return std::llabs(ordered16(a) - ordered16(b)); }
bool bf16_is_nan(uint16_t h) { return (h & 0x7FFF) > 0x7F80; }

std::string hex16(uint16_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "%04x", v);
  return b;
}
std::string hex32(uint32_t v) {
  char b[12];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

const std::vector<uint16_t>& bf16_specials() {
  static const std::vector<uint16_t> v = {
      0x0000, 0x8000,  // +-0
      0x7F80, 0xFF80,  // +-inf
      0x7FC0, 0xFFC1,  // NaN (canonical, and a negative payload NaN)
      0x0001, 0x807F,  // smallest / largest subnormal
      0x0080, 0x7F7F,  // smallest normal, largest finite
      0x3F80, 0xBF80,  // +-1
  };
  return v;
}

uint16_t random_bf16(std::mt19937_64& rng, double special_rate) {
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng) < special_rate) {
    const auto& s = bf16_specials();
    return s[rng() % s.size()];
  }
  const double r = u(rng);
  if (r < 0.85) {  // normal magnitudes around 1
    const int e = static_cast<int>(rng() % 16) - 8;
    const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
    return sign | static_cast<uint16_t>(((e + 127) << 7) | (rng() & 0x7F));
  }
  if (r < 0.95) return static_cast<uint16_t>(rng() & 0x807F);  // subnormal
  return static_cast<uint16_t>(rng());  // any bit pattern, NaN payloads included
}

uint16_t random_gate_bf16(std::mt19937_64& rng, double special_rate) {
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng) < special_rate) {
    static const float spec[] = {-INFINITY, -20.0f, -0.0f, 0.0f, 20.0f, INFINITY, NAN, -88.0f, -90.0f, -100.0f, 88.0f};
    return bf16_from_f32(spec[rng() % (sizeof spec / sizeof spec[0])]);
  }
  const double r = u(rng);
  if (r < 0.8) return bf16_from_f32(static_cast<float>((u(rng) - 0.5) * 24.0));
  if (r < 0.95) return bf16_from_f32(static_cast<float>((u(rng) - 0.5) * 240.0));
  return random_bf16(rng, special_rate);
}

}  // namespace hy4::harness
