// hy4_numeric.h: the number formats and fp32 transcendentals every backend shares.
//
// Bit reproducibility (SPEC "Rules"): every function here uses only IEEE
// round-to-nearest +, -, *, / and floorf, in a fixed order, with no FMA contraction
// (the build passes -ffp-contract=off / --fmad=false) and no hardware approximations.
// They give the same bits on the host (references), the CPU executor, CUDA and HIP.
// Accuracy against float64 over all 2^32 inputs is asserted by the `exhaustive` test.
// NaN results are always the canonical 0x7FC00000: hardware NaN payloads differ.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIP__) || defined(__HIPCC__)
#define HY4_NUM_HD __host__ __device__ inline
#else
#define HY4_NUM_HD inline
#endif

namespace hy4 {

HY4_NUM_HD uint32_t f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
}
HY4_NUM_HD float f32_from_bits(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}
HY4_NUM_HD bool is_nan_f32(float f) { return (f32_bits(f) & 0x7fffffffu) > 0x7f800000u; }

// ---- bf16 ----------------------------------------------------------------------
// IEEE binary32 cut to 16 bits with round-to-nearest-even; every NaN becomes the
// canonical quiet NaN 0x7FC0, so a NaN never rounds into an infinity.
constexpr uint16_t kBf16CanonicalNaN = 0x7FC0;

HY4_NUM_HD uint16_t bf16_from_f32(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return kBf16CanonicalNaN;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
HY4_NUM_HD float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// ---- exp -----------------------------------------------------------------------
// x = k*ln2 + r, |r| <= ~ln2/2 (Cody-Waite split of ln2: the high part has 15
// significant bits, so k*ln2_hi is exact for |k| <= 150), exp(r) by its Taylor
// polynomial to degree 7 (truncation < 2^-27), then p * 2^k with one rounding
// (two exact steps where the result is subnormal or near overflow).
namespace detail {
constexpr float kLn2Hi = 0.693145751953125f;    // 0x3F317200
constexpr float kLn2Lo = 1.42860677e-06f;       // 0x35BFBE8E, ln2 - kLn2Hi
constexpr float kLog2e = 1.44269502f;

HY4_NUM_HD float pow2_f32(int k) {  // 2^k for -126 <= k <= 127, exact
  return f32_from_bits(static_cast<uint32_t>(k + 127) << 23);
}
HY4_NUM_HD float scale_pow2(float p, int k) {  // p in [0.5, 2), -150 <= k <= 128
  if (k > 127) return (p * pow2_f32(127)) * pow2_f32(k - 127);
  if (k < -125) return (p * pow2_f32(k + 64)) * pow2_f32(-64);
  return p * pow2_f32(k);
}
}  // namespace detail

HY4_NUM_HD float exp_f32(float x) {
  if (is_nan_f32(x)) return f32_from_bits(0x7fc00000u);
  if (x > 89.0f) return f32_from_bits(0x7f800000u);
  if (x < -104.0f) return 0.0f;
  const float kf = floorf(x * detail::kLog2e + 0.5f);
  const float r = (x - kf * detail::kLn2Hi) - kf * detail::kLn2Lo;
  float p = 1.98412698e-4f;  // 1/5040
  p = p * r + 1.38888889e-3f;  // 1/720
  p = p * r + 8.33333333e-3f;  // 1/120
  p = p * r + 4.16666667e-2f;  // 1/24
  p = p * r + 1.66666667e-1f;  // 1/6
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return detail::scale_pow2(p, static_cast<int>(kf));
}

// ---- log -----------------------------------------------------------------------
// x = m * 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f);
// log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)).  The four coefficients of R are the
// published minimax values of FreeBSD's e_logf.c (a fact reused, not its code).
HY4_NUM_HD float log_f32(float x) {
  uint32_t ix = f32_bits(x);
  if (is_nan_f32(x)) return f32_from_bits(0x7fc00000u);
  if ((ix & 0x7fffffffu) == 0) return f32_from_bits(0xff800000u);  // log(+-0) = -inf
  if (ix >> 31) return f32_from_bits(0x7fc00000u);                   // log(<0) = NaN
  if (ix == 0x7f800000u) return x;                                   // log(+inf) = +inf
  int e = 0;
  if (ix < 0x00800000u) {  // subnormal: scale up by 2^25 (exact)
    ix = f32_bits(x * 33554432.0f);
    e = -25;
  }
  e += static_cast<int>(ix >> 23) - 127;
  uint32_t mb = (ix & 0x007fffffu) | 0x3f800000u;
  if (mb > 0x3fb504f3u) {  // m > sqrt(2): use m/2
    mb -= 0x00800000u;
    e += 1;
  }
  const float f = f32_from_bits(mb) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float w = z * z;
  const float t1 = w * (0.40000972152f + w * 0.24279078841f);
  const float t2 = z * (0.66666662693f + w * 0.28498786688f);
  const float R = t2 + t1;
  const float hfsq = 0.5f * f * f;
  const float dk = static_cast<float>(e);
  return dk * detail::kLn2Hi - ((hfsq - (s * (hfsq + R) + dk * detail::kLn2Lo)) - f);
}

// ---- sigmoid -------------------------------------------------------------------
// 1 / (1 + exp(-x)): sigmoid(-inf) = +0, sigmoid(+inf) = 1, NaN gives the canonical
// NaN 0x7FC00000.  (IEEE leaves NaN payloads open: 1 + NaN is 0x7FC00000 on x86 but
// 0x7FFFFFFF on sm_90, found by the exhaustive device_bits test; so NaN is returned
// explicitly, as in exp_f32 and log_f32.)
HY4_NUM_HD float sigmoid_f32(float x) {
  if (is_nan_f32(x)) return f32_from_bits(0x7fc00000u);
  return 1.0f / (1.0f + exp_f32(-x));
}

}  // namespace hy4
