// numeric_exhaustive.cpp: the shared fp32 exp / log / sigmoid (platform/hy4_numeric.h)
// over all 2^32 inputs (ctest label `exhaustive`).
//   1. accuracy against float64: the largest error in ULPs is printed and asserted;
//   2. the backend's device computes the same bits as the host (all inputs on a GPU;
//      every HY4_EXHAUSTIVE_STRIDE-th input on the CPU executor, default 101, since
//      there both sides are the same compiler's code).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "device_buffer.h"
#include "numeric_probe.h"
#include "platform/hy4_numeric.h"
#include "support/suite.h"

namespace {

// Error of got against the exact value, in fp32 ULPs of the exact value (subnormal
// spacing below FLT_MIN).  Where exact rounds to an infinity, got must be it.
double ulp_error(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  if (std::isinf(got)) return INFINITY;
  int e = 0;
  std::frexp(std::fabs(exact), &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

struct Worst {
  double ulp = 0;
  uint32_t at = 0;
  void take(double u, uint32_t x) {
    if (u > ulp) {
      ulp = u;
      at = x;
    }
  }
};

template <class F>
void parallel_over_all_inputs(F&& per_range) {
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> ts;
  const uint64_t total = uint64_t{1} << 32, chunk = total / n + 1;
  for (unsigned k = 0; k < n; ++k)
    ts.emplace_back([&, k] {
      const uint64_t b = k * chunk, e = std::min(total, b + chunk);
      per_range(b, e);
    });
  for (auto& t : ts) t.join();
}

}  // namespace

// Bounds (measured over all inputs by this test, then fixed): exp 1.5 ulp, log 1 ulp,
// sigmoid 2.5 ulp where sigmoid >= FLT_MIN.  Below FLT_MIN (x < -87.3) sigmoid_f32
// = 1/(1+exp(-x)) loses its bits exactly as eager PyTorch's does (0 below -88.72);
// there the promise is an absolute error below FLT_MIN.
TEST(NumericExhaustive, AccuracyAgainstFloat64OverAll2To32Inputs) {
  const double kExpBound = 1.5, kLogBound = 1.0, kSigmoidBound = 2.5;
  std::mutex mu;
  Worst we, wl, ws;
  uint64_t sigmoid_tiny_violations = 0;
  parallel_over_all_inputs([&](uint64_t b, uint64_t e) {
    Worst le, ll, ls;
    uint64_t tiny_bad = 0;
    for (uint64_t u = b; u < e; ++u) {
      const uint32_t bits = static_cast<uint32_t>(u);
      const float x = hy4::f32_from_bits(bits);
      const double xd = x;
      le.take(ulp_error(hy4::exp_f32(x), std::exp(xd)), bits);
      ll.take(ulp_error(hy4::log_f32(x), std::log(xd)), bits);
      const double sig = 1.0 / (1.0 + std::exp(-xd));
      const float got = hy4::sigmoid_f32(x);
      if (!std::isnan(sig) && sig < 0x1p-126) {
        if (!(std::fabs(static_cast<double>(got) - sig) < 0x1p-126)) ++tiny_bad;
      } else {
        ls.take(ulp_error(got, sig), bits);
      }
    }
    std::lock_guard<std::mutex> lk(mu);
    we.take(le.ulp, le.at);
    wl.take(ll.ulp, ll.at);
    ws.take(ls.ulp, ls.at);
    sigmoid_tiny_violations += tiny_bad;
  });
  std::printf("[hy4] exp_f32     worst %.4f ulp at %a (bound %.1f)\n", we.ulp, hy4::f32_from_bits(we.at), kExpBound);
  std::printf("[hy4] log_f32     worst %.4f ulp at %a (bound %.1f)\n", wl.ulp, hy4::f32_from_bits(wl.at), kLogBound);
  std::printf("[hy4] sigmoid_f32 worst %.4f ulp at %a (bound %.1f; %llu inputs below FLT_MIN off by >= FLT_MIN)\n",
              ws.ulp, hy4::f32_from_bits(ws.at), kSigmoidBound, static_cast<unsigned long long>(sigmoid_tiny_violations));
  EXPECT_LE(we.ulp, kExpBound);
  EXPECT_LE(wl.ulp, kLogBound);
  EXPECT_LE(ws.ulp, kSigmoidBound);
  EXPECT_EQ(sigmoid_tiny_violations, 0u);
}

TEST(NumericExhaustive, DeviceBitsEqualHostBits) {
  HY4_REQUIRE_DEVICE();
  const bool cpu = hy4::rt::backend() == hy4::rt::Backend::Cpu;
  const char* env = std::getenv("HY4_EXHAUSTIVE_STRIDE");
  const uint32_t stride = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 0)) : (cpu ? 101u : 1u);
  ASSERT_GE(stride, 1u);
  const uint64_t total = ((uint64_t{1} << 32) + stride - 1) / stride;
  const uint32_t chunk = 1u << 24;
  hy4::harness::ScopedStream s;
  hy4::harness::DeviceBuffer<uint32_t> de(chunk), dl(chunk), ds(chunk), df(chunk);
  std::vector<uint32_t> he, hl, hs, hf;
  uint64_t mismatches = 0, checked = 0, fast_violations = 0;
  double fast_worst = 0;
  uint32_t fast_worst_at = 0;
  for (uint64_t first_index = 0; first_index < total; first_index += chunk) {
    const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(chunk, total - first_index));
    const uint32_t first = static_cast<uint32_t>(first_index * stride);
    hy4::numeric_probe_launch(first, stride, count, de.get(), dl.get(), ds.get(), df.get(), s);
    de.download(he, s);
    dl.download(hl, s);
    ds.download(hs, s);
    df.download(hf, s);
    hy4::rt::synchronize(s);
    for (uint32_t i = 0; i < count; ++i) {
      const float x = hy4::f32_from_bits(first + i * stride);
      const bool same = he[i] == hy4::f32_bits(hy4::exp_f32(x)) && hl[i] == hy4::f32_bits(hy4::log_f32(x)) &&
                        hs[i] == hy4::f32_bits(hy4::sigmoid_f32(x));
      if (!same && mismatches++ < 8)
        ADD_FAILURE() << "input " << std::hex << hy4::f32_bits(x) << ": device exp/log/sigmoid " << he[i] << "/"
                      << hl[i] << "/" << hs[i] << ", host " << hy4::f32_bits(hy4::exp_f32(x)) << "/"
                      << hy4::f32_bits(hy4::log_f32(x)) << "/" << hy4::f32_bits(hy4::sigmoid_f32(x));
      // dev::fast_sigmoid's promise (topk's filter margin rests on it): within 2^-16 of
      // sigmoid_f32, NaN exactly for NaN.
      const float fs = hy4::f32_from_bits(hf[i]), es = hy4::sigmoid_f32(x);
      const double d = std::fabs(static_cast<double>(fs) - static_cast<double>(es));
      const bool fast_ok = std::isnan(x) ? std::isnan(fs) : !std::isnan(fs) && d <= 0x1p-16;
      if (!std::isnan(x) && d > fast_worst) {
        fast_worst = d;
        fast_worst_at = hy4::f32_bits(x);
      }
      if (!fast_ok && fast_violations++ < 8)
        ADD_FAILURE() << "input " << std::hex << hy4::f32_bits(x) << ": device fast_sigmoid " << hf[i]
                      << " is not within 2^-16 of sigmoid_f32 " << hy4::f32_bits(es);
    }
    checked += count;
  }
  std::printf("[hy4] %s: %llu inputs (stride %u), %llu differ from the host\n", hy4::rt::device_name().c_str(),
              static_cast<unsigned long long>(checked), stride, static_cast<unsigned long long>(mismatches));
  std::printf("[hy4] fast_sigmoid: worst |fast - sigmoid_f32| %.3g at %a (promise 2^-16 = %.3g), %llu beyond\n",
              fast_worst, hy4::f32_from_bits(fast_worst_at), 0x1p-16, static_cast<unsigned long long>(fast_violations));
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(fast_violations, 0u);
}
