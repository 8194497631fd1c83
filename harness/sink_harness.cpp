#include "sink_harness.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "device_buffer.h"
#include "fault_case.h"
#include "numerics.h"
#include "platform/hy4_numeric.h"
#include "refusals.h"
#include "sink.h"
#include "sink_reference.h"

namespace hy4::harness {

namespace {
int64_t out_elems(const SinkCase& c) {
  const auto& s = c.shape;
  return s.out_offset + (s.T > 0 ? (s.T - 1) * c.out_ts() + c.out_ts() : 0);  // whole token rows, padding included
}
int64_t lse_elems(const SinkCase& c) {
  const auto& s = c.shape;
  return s.lse_offset + (s.T > 0 ? s.T * c.lse_ts() : 0);
}
uint32_t out_word(std::mt19937_64& rng, bool bf16) {
  const uint16_t h = random_bf16(rng, 0.05);
  if (bf16) return h;
  return f32_bits(bf16_to_f32(h)) ^ static_cast<uint32_t>(rng() & 0xFFFF);  // fp32 with low bits set
}
float normal(std::mt19937_64& rng, double mean, double sd) {
  std::normal_distribution<double> d(mean, sd);
  return static_cast<float>(d(rng));
}
const float kInf = std::numeric_limits<float>::infinity();
float special_lse(std::mt19937_64& rng) {
  static const float v[] = {-kInf, kInf, std::nanf(""), 1e30f, -1e30f, 3e38f, -3e38f, 1e-40f, -1e-40f, 0.0f, -0.0f,
                            88.0f, -88.0f, 104.0f, -104.0f};
  return v[rng() % (sizeof v / sizeof v[0])];
}
float special_sink(std::mt19937_64& rng) {
  static const float v[] = {-kInf, 0.0f, -0.0f, 50.0f, -50.0f, 1e4f, -1e4f, 1e30f, kInf, std::nanf("")};
  return v[rng() % (sizeof v / sizeof v[0])];
}
}  // namespace

SinkShape sink_hyv4_shape(int64_t T) {
  SinkShape s;
  s.T = T;
  s.H = 8;
  s.D = 512;
  s.out_bf16 = true;
  s.out_head_pad = 512;        // head stride 1024: every other of 16 padded heads
  s.out_token_pad = 512;       // token stride 16 x 512
  s.lse_head_stride = 2;       // lse [T, 16] viewed with stride 2
  s.lse_token_pad = 1;         // token stride 16
  s.aiter_padded_heads = 16;
  return s;
}

SinkCase make_sink_case(uint64_t seed, const SinkShape& shape) {
  SinkCase c;
  c.seed = seed;
  c.shape = shape;
  std::mt19937_64 rng(seed);
  const int64_t T = shape.T, H = shape.H, D = shape.D;
  c.out.resize(out_elems(c));
  c.lse.resize(lse_elems(c));
  for (auto& w : c.out) w = out_word(rng, shape.out_bf16);  // gaps hold garbage too
  for (auto& w : c.lse) w = f32_bits(normal(rng, 2, 4));
  c.sinks.resize(H);
  std::vector<int32_t> len(T);
  for (int64_t t = 0; t < T; ++t) {
    SinkValues mode = shape.values;
    if (mode == SinkValues::Mixed) mode = static_cast<SinkValues>(rng() % 4);
    // Empty rows: zero-length, or (every third token) a decreasing pair, which sink.h
    // also counts as empty (no extra draw, so the other tokens' values stay as they were).
    len[t] = mode == SinkValues::Empty ? (t % 3 == 1 ? -static_cast<int32_t>(1 + t % 5) : 0)
                                       : (rng() % 4 == 0 ? 0 : static_cast<int32_t>(1 + rng() % 9));
    for (int64_t h = 0; h < H; ++h) {
      uint32_t& l = c.lse[shape.lse_offset + t * c.lse_ts() + h * c.lse_hs()];
      if (mode == SinkValues::Specials && rng() % 3 == 0) l = f32_bits(special_lse(rng));
      if (mode == SinkValues::Extreme) l = f32_bits(normal(rng, 0, 1) * std::pow(10.0f, static_cast<float>(rng() % 31)));
      if (len[t] == 0 || mode == SinkValues::Specials || mode == SinkValues::Empty) {
        // empty or faulty rows: out holds NaN, inf or stale values
        for (int64_t d = 0; d < D; ++d) {
          uint32_t& o = c.out[shape.out_offset + t * c.out_ts() + h * c.out_hs() + d];
          const uint64_t r = rng() % 8;
          if (r == 0) o = shape.out_bf16 ? 0x7FC0u : 0x7FC00000u;
          else if (r == 1) o = shape.out_bf16 ? 0xFF80u : 0xFF800000u;
        }
      }
    }
  }
  if (!shape.lengths.empty())
    for (int64_t t = 0; t < T; ++t) len[t] = shape.lengths[t % shape.lengths.size()];
  for (int64_t h = 0; h < H; ++h) {
    float v = normal(rng, 0, 2);
    if (shape.values == SinkValues::Specials || (shape.values == SinkValues::Mixed && rng() % 4 == 0)) v = special_sink(rng);
    if (shape.values == SinkValues::Extreme) v = normal(rng, 0, 1) * std::pow(10.0f, static_cast<float>(rng() % 31));
    c.sinks[h] = f32_bits(v);
  }
  c.kv_indptr.resize(T + 1);
  c.kv_indptr[0] = static_cast<int32_t>(rng() % 100);
  for (int64_t t = 0; t < T; ++t) c.kv_indptr[t + 1] = c.kv_indptr[t] + len[t];
  return c;
}

// The kernel's case splits (kernels/sink.hip, sink_plan.cpp) and where the generator
// crosses each, on both sides, at warp 32 and 64 (every test runs as cpu32 and cpu64;
// the kernel itself has no warp collective, the block's barriers are warp-size blind):
//   vector | scalar path  D % vec == 0 (8 bf16 / 4 fp32) with aligned strides and offset,
//                         or not: D in {vec-1, vec, vec+1, 2vec, ...}, pads 0 | odd, offsets 0 | odd
//   heads per block G     2*256 / units (T > kSpreadHeadsMaxTokens) or 128 / units (T <= it)
//                         clamped to [1, min(H, 32)]: D from 1 to 1024 moves G over 1 .. 32;
//                         H % G != 0 gives a short last group; both T regimes:
//                         EveryVectorAndGroupSplitBothSides, SpreadHeadsBothSidesOfTheSplit
//   units per thread      G*units > 256 | <= 256 (the block's unit loop runs once or more)
//   tokens per block P    1 below 2048 tokens, then T / 1024 up to 4; T % P != 0 leaves a
//                         short last set: EveryTokensPerBlockSplitBothSides
//   grid cap              SinkPlan::kMaxGrid blocks of P tokens: RowsPastTheGridCap
//   empty | active row    kv length 0 | < 0 (decreasing pair) | > 0, +-inf lse, NaN lse, -inf / +inf /
//                         NaN sink
//   out dtype             bf16 | fp32
SinkCase random_sink_case(uint64_t seed, int64_t max_T) {
  std::mt19937_64 rng(seed ^ 0x51c4ULL);
  SinkShape s;
  s.T = static_cast<int64_t>(rng() % (max_T + 1));
  static const int64_t heads[] = {1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 64, 128};
  static const int64_t dims[] = {1, 3, 4, 5, 7, 8, 9, 16, 63, 64, 65, 128, 256, 512, 513, 1024};
  s.H = rng() % 2 ? heads[rng() % 12] : 1 + static_cast<int64_t>(rng() % 128);
  s.D = rng() % 2 ? dims[rng() % 16] : 1 + static_cast<int64_t>(rng() % 1024);
  if (s.H * s.D > 8192) s.D = std::max<int64_t>(1, 8192 / s.H);  // keep cases small
  s.out_bf16 = rng() % 3 != 0;
  s.out_head_pad = rng() % 2 ? 0 : static_cast<int64_t>(rng() % 17);
  s.out_token_pad = rng() % 2 ? 0 : static_cast<int64_t>(rng() % 17);
  s.lse_head_stride = 1 + static_cast<int64_t>(rng() % 3);
  s.lse_token_pad = static_cast<int64_t>(rng() % 3);
  s.out_offset = rng() % 2 ? 0 : static_cast<int64_t>(rng() % 9);
  s.lse_offset = static_cast<int64_t>(rng() % 3);
  s.values = static_cast<SinkValues>(rng() % 5);
  return make_sink_case(seed, s);
}

CaseFile sink_to_file(const SinkCase& c) {
  CaseFile f;
  f.op = "sink";
  const auto& s = c.shape;
  f.ints = {{"seed", static_cast<int64_t>(c.seed)}, {"T", s.T}, {"H", s.H}, {"D", s.D},
            {"out_bf16", s.out_bf16 ? 1 : 0}, {"out_head_pad", s.out_head_pad}, {"out_token_pad", s.out_token_pad},
            {"lse_head_stride", s.lse_head_stride}, {"lse_token_pad", s.lse_token_pad},
            {"out_offset", s.out_offset}, {"lse_offset", s.lse_offset},
            {"aiter_padded_heads", s.aiter_padded_heads}, {"values", static_cast<int64_t>(s.values)}};
  if (!c.origin.empty()) f.text["origin"] = c.origin;
  if (s.out_bf16) {
    std::vector<uint16_t> o(c.out.begin(), c.out.end());
    f.put16("out", o);
  } else {
    f.put32("out", c.out);
  }
  f.put32("lse", c.lse);
  f.put32("sinks", c.sinks);
  f.put32("kv_indptr", std::vector<uint32_t>(c.kv_indptr.begin(), c.kv_indptr.end()));
  return f;
}

SinkCase sink_from_file(const CaseFile& f) {
  if (f.op != "sink") throw CaseFileError("case file holds op '" + f.op + "', not 'sink'");
  SinkCase c;
  auto& s = c.shape;
  // Every size is range-checked before anything is computed from it, so no product
  // below can overflow (T <= 2^24, strides <= 2^20: spans stay below 2^52).
  c.seed = static_cast<uint64_t>(f.get_or("seed", 0));
  s.T = f.get_in("T", 0, SinkPlan::kMaxTokens);
  s.H = f.get_in("H", 1, SinkPlan::kMaxHeads);
  s.D = f.get_in("D", 1, SinkPlan::kMaxDim);
  s.out_bf16 = f.get_or_in("out_bf16", 1, 0, 1) != 0;
  s.out_head_pad = f.get_or_in("out_head_pad", 0, 0, 1 << 20);
  s.out_token_pad = f.get_or_in("out_token_pad", 0, 0, 1 << 20);
  s.lse_head_stride = f.get_or_in("lse_head_stride", 1, 1, 1 << 20);
  s.lse_token_pad = f.get_or_in("lse_token_pad", 0, 0, 1 << 20);
  s.out_offset = f.get_or_in("out_offset", 0, 0, 1 << 20);
  s.lse_offset = f.get_or_in("lse_offset", 0, 0, 1 << 20);
  s.aiter_padded_heads = static_cast<int>(f.get_or_in("aiter_padded_heads", 0, 0, 1024));
  s.values = static_cast<SinkValues>(f.get_or_in("values", 0, 0, 4));
  if (f.generated()) {
    f.check_generated_size(out_elems(c) + lse_elems(c) + s.H + s.T + 1);
    SinkCase g = make_sink_case(c.seed, s);
    g.origin = f.text_or("origin", "generated from seed and shape");
    return g;
  }
  const auto out = s.out_bf16 ? f.tensor16("out") : std::vector<uint16_t>{};
  if (s.out_bf16) c.out.assign(out.begin(), out.end());
  else c.out = f.tensor32("out");
  c.lse = f.tensor32("lse");
  c.sinks = f.tensor32("sinks");
  const auto ip = f.tensor32("kv_indptr");
  c.kv_indptr.assign(ip.begin(), ip.end());
  c.origin = f.text_or("origin", "");
  if (static_cast<int64_t>(c.out.size()) < out_elems(c)) throw CaseFileError("sink case: tensor out is shorter than its shape needs (" + std::to_string(out_elems(c)) + ")");
  if (static_cast<int64_t>(c.lse.size()) < lse_elems(c)) throw CaseFileError("sink case: tensor lse is shorter than its shape needs (" + std::to_string(lse_elems(c)) + ")");
  if (static_cast<int64_t>(c.sinks.size()) < s.H) throw CaseFileError("sink case: tensor sinks has fewer than H elements");
  if (static_cast<int64_t>(c.kv_indptr.size()) < s.T + 1) throw CaseFileError("sink case: tensor kv_indptr has fewer than T + 1 elements");
  c.out.resize(out_elems(c));
  c.lse.resize(lse_elems(c));
  c.sinks.resize(s.H);
  c.kv_indptr.resize(s.T + 1);
  return c;
}

namespace {

struct SinkDeviceBuffers {
  DeviceBuffer<uint16_t> out16;
  DeviceBuffer<uint32_t> out32, lse, sinks;
  DeviceBuffer<int32_t> indptr;
  SinkArgs args;
  bool bf16;
  explicit SinkDeviceBuffers(const SinkCase& c)
      : out16(c.shape.out_bf16 ? c.out.size() : 0), out32(c.shape.out_bf16 ? 0 : c.out.size()), lse(c.lse.size()),
        sinks(c.sinks.size()), indptr(c.kv_indptr.size()), bf16(c.shape.out_bf16) {
    const auto& s = c.shape;
    void* out = bf16 ? static_cast<void*>(out16.get() + s.out_offset) : static_cast<void*>(out32.get() + s.out_offset);
    args.out = HeadView{out, bf16 ? DType::BF16 : DType::F32, s.T, s.H, s.D, c.out_ts(), c.out_hs()};
    args.lse = HeadView{lse.get() + s.lse_offset, DType::F32, s.T, s.H, 1, c.lse_ts(), c.lse_hs()};
    args.sinks = reinterpret_cast<const float*>(sinks.get());
    args.kv_indptr = indptr.get();
    args.aiter_padded_heads = s.aiter_padded_heads;
  }
  void upload(const SinkCase& c, hy4::rt::Stream s) {
    if (bf16) {
      std::vector<uint16_t> o(c.out.begin(), c.out.end());
      out16.upload(o, s);
      hy4::rt::synchronize(s);  // o leaves scope
    } else {
      out32.upload(c.out, s);
    }
    lse.upload(c.lse, s);
    sinks.upload(c.sinks, s);
    indptr.upload(c.kv_indptr, s);
  }
  SinkOutput download(hy4::rt::Stream s) {
    SinkOutput r;
    if (bf16) {
      std::vector<uint16_t> o;
      out16.download(o, s);
      hy4::rt::synchronize(s);
      r.out.assign(o.begin(), o.end());
    } else {
      out32.download(r.out, s);
    }
    lse.download(r.lse, s);
    hy4::rt::synchronize(s);
    return r;
  }
};

ref::SinkInput ref_input(const SinkCase& c, std::vector<float>& sinks) {
  sinks.resize(c.sinks.size());
  for (std::size_t i = 0; i < sinks.size(); ++i) sinks[i] = f32_from_bits(c.sinks[i]);
  ref::SinkInput in;
  in.T = c.shape.T;
  in.H = c.shape.H;
  in.D = c.shape.D;
  in.out_bf16 = c.shape.out_bf16;
  in.out_ts = c.out_ts();
  in.out_hs = c.out_hs();
  in.lse_ts = c.lse_ts();
  in.lse_hs = c.lse_hs();
  in.sinks = sinks.data();
  in.kv_indptr = c.kv_indptr.data();
  return in;
}

std::string f32s(float v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// ulp of x in fp32 (bf16 when bits16), at least the smallest subnormal.
double ulp_of(double x, bool bf16) {
  const int mant = bf16 ? 7 : 23;
  int e = 0;
  std::frexp(std::max(std::fabs(x), 0x1p-149), &e);
  return std::ldexp(1.0, std::max(e - 1, -126) - mant);
}

}  // namespace

SinkOutput run_sink_eager(const SinkCase& c, hy4::rt::Stream s) {
  SinkDeviceBuffers b(c);
  SinkPlan plan(b.args);
  const KeepCaseOnFault keep([&] { return sink_to_file(c); }, false);
  b.upload(c, s);
  hy4::rt::begin_case_schedule(c.seed);  // the CPU executor: the same schedule whenever this case runs
  plan.launch(s);
  return b.download(s);
}

SinkOutput sink_expected(const SinkCase& c) {
  SinkOutput r;
  std::vector<float> sinks;
  const ref::SinkInput in = ref_input(c, sinks);
  std::vector<float> lse(c.lse.size());
  for (std::size_t i = 0; i < lse.size(); ++i) lse[i] = f32_from_bits(c.lse[i]);
  float* lv = lse.data() + c.shape.lse_offset;
  if (c.shape.out_bf16) {
    std::vector<uint16_t> o(c.out.begin(), c.out.end());
    ref::sink_bit_model(in, o.data() + c.shape.out_offset, lv);
    r.out.assign(o.begin(), o.end());
  } else {
    std::vector<float> o(c.out.size());
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = f32_from_bits(c.out[i]);
    ref::sink_bit_model(in, o.data() + c.shape.out_offset, lv);
    r.out.resize(o.size());
    for (std::size_t i = 0; i < o.size(); ++i) r.out[i] = f32_bits(o[i]);
  }
  r.lse.resize(lse.size());
  for (std::size_t i = 0; i < lse.size(); ++i) r.lse[i] = f32_bits(lse[i]);
  return r;
}

// The float64 bound.  In fp32, sink_lse = m + log_f32(1 + e) with e = exp_f32(-|safe -
// sink|) in (0, 1]: exp_f32 and log_f32 are within 2.5 ulp (the exhaustive test), the
// sum 1 + e rounds by 2^-24 relative, so log's result is off by at most ~2^-21
// absolutely, and m + L adds half an ulp of sink_lse:
//     |sink_lse - lse64| <= ulp(sink_lse) + 2^-20            (a 2x margin).
// scale = exp_f32(safe - sink_lse): the difference carries that absolute error (plus
// half an ulp of itself), which exp turns into a relative error, plus exp's own:
//     rel(scale) <= ulp(sink_lse) + ulp(safe - sink_lse) + 2^-20.
// This is the conditioning of exp(lse - sink_lse): with |lse| ~ 1e4 fp32 cannot hold
// lse closer than 1e-3, so no fp32 kernel does better than ~1e-3 relative there.
// out = RN(o * scale): |out - o*scale64| <= |o*scale64| * rel + half an ulp of the
// output type (+ its smallest subnormal where the product underflows).  Where the
// scale itself is subnormal in fp32 (lse - sink_lse < -87), exp_f32 has an absolute
// quantum of 2^-149, so |o| * 2^-149 is added (and inf * an underflowed 0 = NaN is
// accepted); worst_ulp reports the normal-scale elements.
Verdict check_sink(const SinkCase& c, const SinkOutput& got) {
  Verdict v;
  v.bound_ulp = 1;  // the ulp part of the bound; the conditioned part is reported per element
  const SinkOutput want = sink_expected(c);
  const auto& s = c.shape;
  const bool bf16 = s.out_bf16;
  v.elements = s.T * s.H * (s.D + 1);
  if (got.out.size() != want.out.size() || got.lse.size() != want.lse.size()) {
    v.bit_mismatches = 1;
    v.note("buffers came back with the wrong size");
    return v;
  }
  // 1. bitwise, whole buffers (the gaps of the strided views must keep their bits).
  auto locate_out = [&](int64_t k, int64_t* t, int64_t* h, int64_t* d) {
    const int64_t rel = k - s.out_offset;
    if (rel < 0) return false;
    *t = rel / c.out_ts();
    const int64_t r = rel % c.out_ts();
    *h = r / c.out_hs();
    *d = r % c.out_hs();
    return *t < s.T && *h < s.H && *d < s.D;
  };
  for (std::size_t k = 0; k < want.out.size(); ++k) {
    if (got.out[k] == want.out[k]) continue;
    ++v.bit_mismatches;
    int64_t t, h, d;
    std::ostringstream os;
    if (!locate_out(static_cast<int64_t>(k), &t, &h, &d)) {
      os << "out buffer[" << k << "] outside the [T, H, D] view was written: " << hex32(got.out[k]) << ", was "
         << hex32(want.out[k]);
    } else {
      const float l = f32_from_bits(c.lse[s.lse_offset + t * c.lse_ts() + h * c.lse_hs()]);
      os << "out[t=" << t << ", h=" << h << ", d=" << d << "]: got " << hex32(got.out[k]) << ", bit model "
         << hex32(want.out[k]) << " (was " << hex32(c.out[k]) << "); lse " << f32s(l) << ", sink "
         << f32s(f32_from_bits(c.sinks[h])) << ", kv " << c.kv_indptr[t] << ".." << c.kv_indptr[t + 1];
    }
    v.note(os.str());
  }
  for (std::size_t k = 0; k < want.lse.size(); ++k) {
    if (got.lse[k] == want.lse[k]) continue;
    ++v.bit_mismatches;
    std::ostringstream os;
    os << "lse buffer[" << k << "]: got " << hex32(got.lse[k]) << " (" << f32s(f32_from_bits(got.lse[k]))
       << "), bit model " << hex32(want.lse[k]) << " (" << f32s(f32_from_bits(want.lse[k])) << "), was "
       << hex32(c.lse[k]);
    v.note(os.str());
  }
  if (s.T == 0) return v;
  // 2. the promises stated directly, and float64 within the bound.
  std::vector<float> sinks;
  const ref::SinkInput in = ref_input(c, sinks);
  std::vector<float> lse_in(c.lse.size());
  for (std::size_t i = 0; i < lse_in.size(); ++i) lse_in[i] = f32_from_bits(c.lse[i]);
  std::vector<double> out64(s.T * s.H * s.D), lse64(s.T * s.H);
  std::vector<uint8_t> active(s.T * s.H);
  std::vector<float> out_in;
  std::vector<uint16_t> out_in16;
  const void* out_ptr;
  if (bf16) {
    out_in16.assign(c.out.begin(), c.out.end());
    out_ptr = out_in16.data() + s.out_offset;
  } else {
    out_in.resize(c.out.size());
    for (std::size_t i = 0; i < out_in.size(); ++i) out_in[i] = f32_from_bits(c.out[i]);
    out_ptr = out_in.data() + s.out_offset;
  }
  ref::sink_math(in, out_ptr, lse_in.data() + s.lse_offset, out64.data(), lse64.data(), active.data());
  auto fail = [&](const std::string& what) {
    ++v.bound_violations;
    v.note(what);
  };
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t lk = s.lse_offset + t * c.lse_ts() + h * c.lse_hs();
      const float l_in = f32_from_bits(c.lse[lk]), l_got = f32_from_bits(got.lse[lk]);
      const float sink = sinks[h];
      const double l64 = lse64[t * s.H + h];
      const std::string where = "(t=" + std::to_string(t) + ", h=" + std::to_string(h) + ")";
      if (!active[t * s.H + h]) {
        // empty row: out exactly +0 whatever it held, lse exactly the sink
        // (by value: a -0 sink gives +0, since sink_lse = sink + log_f32(1) = -0 + +0)
        if (!(l_got == sink) && !(std::isnan(sink) && std::isnan(l_got)))
          fail("empty row " + where + ": lse " + f32s(l_got) + ", expected the sink " + f32s(sink));
        for (int64_t d = 0; d < s.D; ++d)
          if (got.out[s.out_offset + t * c.out_ts() + h * c.out_hs() + d] != 0) {
            fail("empty row " + where + ": out[d=" + std::to_string(d) + "] is " +
                 hex32(got.out[s.out_offset + t * c.out_ts() + h * c.out_hs() + d]) + ", expected +0");
            break;
          }
        continue;
      }
      if (std::isnan(l_in)) {
        // an upstream fault stays visible
        if (!std::isnan(l_got)) fail("NaN lse on an active row " + where + " became " + f32s(l_got));
        for (int64_t d = 0; d < s.D; ++d) {
          const uint32_t o = got.out[s.out_offset + t * c.out_ts() + h * c.out_hs() + d];
          if (!(bf16 ? bf16_is_nan(static_cast<uint16_t>(o)) : std::isnan(f32_from_bits(o)))) {
            fail("NaN lse on an active row " + where + ": out[d=" + std::to_string(d) + "] is " + hex32(o) + ", not NaN");
            break;
          }
        }
        continue;
      }
      // lse vs float64
      if (std::isnan(l64) != std::isnan(l_got) || (std::isinf(l64) && l64 != l_got))
        fail("lse " + where + ": got " + f32s(l_got) + ", float64 " + f32s(static_cast<float>(l64)));
      else if (std::isfinite(l64)) {
        const double err = std::fabs(static_cast<double>(l_got) - l64);
        const double allowed = ulp_of(l_got, false) + 0x1p-20;
        if (err > allowed) fail("lse " + where + ": got " + f32s(l_got) + ", float64 " + std::to_string(l64));
      }
      const double diff = static_cast<double>(l_in) - static_cast<double>(l_got);
      const double rel = (std::isfinite(l64) ? ulp_of(l_got, false) + ulp_of(diff, false) : 0.0) + 0x1p-20;
      for (int64_t d = 0; d < s.D; ++d) {
        const int64_t ok_ = s.out_offset + t * c.out_ts() + h * c.out_hs() + d;
        const uint32_t o = got.out[ok_];
        const double o_in = bf16 ? bf16_to_f32(static_cast<uint16_t>(c.out[ok_])) : f32_from_bits(c.out[ok_]);
        const double x = out64[(t * s.H + h) * s.D + d];
        const double g = bf16 ? bf16_to_f32(static_cast<uint16_t>(o)) : f32_from_bits(o);
        // exp_f32's result has an absolute quantum of 2^-149 where it is subnormal (and
        // is 0 below ~2^-150): inf * that 0 is NaN, and |o| * 2^-149 is the error floor.
        const double scale64 = std::isfinite(l64) ? std::exp(static_cast<double>(l_in) - l64) : 0.0;
        if (std::isinf(o_in) && scale64 < 0x1p-148 && std::isnan(g)) continue;
        if (std::isnan(x) || std::isnan(g) || std::isinf(x) || std::isinf(g)) {
          if (!(std::isnan(x) && std::isnan(g)) && x != g)
            fail("out " + where + "[d=" + std::to_string(d) + "]: got " + std::to_string(g) + ", float64 " + std::to_string(x));
          continue;
        }
        const double u = ulp_of(x, bf16);
        const double allowed =
            0.5 * u + std::fabs(x) * rel + (bf16 ? 0x1p-133 : 0x1p-149) + (scale64 < 0x1p-125 ? std::fabs(o_in) * 0x1p-149 : 0.0);
        const double err = std::fabs(g - x);
        if (scale64 >= 0x1p-125) v.worst_ulp = std::max(v.worst_ulp, err / u);
        if (err > allowed) {
          std::ostringstream os;
          os.precision(17);
          os << "out " << where << "[d=" << d << "]: got " << g << ", float64 " << x << " (" << err / u
             << " ulp, allowed " << allowed / u << ")";
          fail(os.str());
        }
      }
    }
  return v;
}

std::vector<SinkOutput> run_sink_replays(const SinkCase& capture, const std::vector<SinkCase>& data,
                                         hy4::rt::Stream s, std::vector<SinkCase>* as_run) {
  SinkDeviceBuffers b(capture);
  SinkPlan plan(b.args);
  const KeepCaseOnFault keep([&] { return sink_to_file(capture); }, true);
  b.upload(capture, s);
  hy4::rt::synchronize(s);
  CapturedGraph graph(s, [&](hy4::rt::Stream cs) { plan.launch(cs); });
  std::mt19937_64 rng(capture.seed ^ 0x5eeb);
  std::vector<SinkOutput> outs;
  std::vector<uint32_t> previous = capture.out;  // what out held before this replay's writes
  const auto& sh = capture.shape;
  for (const SinkCase& d : data) {
    if (d.out.size() != capture.out.size() || d.lse.size() != capture.lse.size() || d.kv_indptr.size() != capture.kv_indptr.size())
      throw std::invalid_argument("run_sink_replays: a data case has another shape than the capture");
    SinkCase cur = d;
    // Empty tokens keep the previous replay's out (stale), some turned NaN or inf.
    for (int64_t t = 0; t < sh.T; ++t) {
      if (d.kv_indptr[t + 1] > d.kv_indptr[t]) continue;
      for (int64_t h = 0; h < sh.H; ++h)
        for (int64_t e = 0; e < sh.D; ++e) {
          const int64_t k = sh.out_offset + t * capture.out_ts() + h * capture.out_hs() + e;
          const uint64_t r = rng() % 8;
          cur.out[k] = r == 0 ? (sh.out_bf16 ? 0x7FC0u : 0x7FC00000u)
                       : r == 1 ? (sh.out_bf16 ? 0x7F80u : 0x7F800000u)
                                : previous[k];
        }
    }
    b.upload(cur, s);
    hy4::rt::begin_case_schedule(cur.seed);  // as in run_sink_eager: the replayed case's own schedule
    graph.replay();
    outs.push_back(b.download(s));
    previous = outs.back().out;
    if (as_run) as_run->push_back(cur);
  }
  return outs;
}

Replays<SinkCase, SinkOutput> sink_graph_scenario(uint64_t seed, int64_t T, int generated, hy4::rt::Stream s) {
  SinkShape shape = sink_hyv4_shape(T);
  shape.values = SinkValues::Mixed;
  const SinkCase capture = make_sink_case(seed, shape);
  std::vector<SinkCase> data;
  const std::vector<std::vector<int32_t>> upstream = {{5, 5, 5, 5}, {7, 0, 3, 0}, {0, 2, 0, 9}};
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 3 + generated; ++k) {
    SinkShape sh = shape;
    if (k < 3) {
      sh.lengths = upstream[k];
    } else {
      sh.lengths.resize(T);
      const uint64_t empty_share = rng() % 5;  // 0: none empty .. 4: all empty
      for (auto& l : sh.lengths) l = (rng() % 4 < empty_share) ? 0 : static_cast<int32_t>(1 + rng() % 64);
    }
    data.push_back(make_sink_case(seed + 1 + k, sh));
  }
  Replays<SinkCase, SinkOutput> r;
  r.outs = run_sink_replays(capture, data, s, &r.as_run);
  return r;
}

namespace {
// refusals.h's past_last_element for a [T, H, C] view: its extent ends with the last
// token's last head's last element (the padding after it is not part of it).
char* past_last_element(const HeadView& v) {
  return static_cast<char*>(v.data) +
         ((v.tokens - 1) * v.token_stride + (v.heads - 1) * v.head_stride + v.cols) * dtype_size(v.dtype);
}
}  // namespace

std::vector<std::string> sink_bad_argument_failures(int* classes) {
  DeviceBuffer<uint16_t> out(4 * 16 * 64 + 64);
  DeviceBuffer<float> lse(4 * 16 + 16), sinks(16);
  DeviceBuffer<int32_t> indptr(8);
  ScopedStream s;
  std::vector<uint16_t> poison(out.size(), 0xBEEF);
  out.upload(poison, s);
  // A [4, 8, 64] stride-2 head view of a [4, 16, 64] buffer; lse [4, 16] with stride 2.
  static uint16_t* o_base;
  static float *l_base, *s_base;
  static int32_t* i_base;
  o_base = out.get();
  l_base = lse.get();
  s_base = sinks.get();
  i_base = indptr.get();
  auto good = [&] {
    SinkArgs a;
    a.out = HeadView{o_base, DType::BF16, 4, 8, 64, 16 * 64, 2 * 64};
    a.lse = HeadView{l_base, DType::F32, 4, 8, 1, 16, 2};
    a.sinks = s_base;
    a.kv_indptr = i_base;
    a.aiter_padded_heads = 16;
    return a;
  };
  static const RefusalClass<SinkArgs> bad[] = {
      {"'out' is a null pointer", [](SinkArgs& a) { a.out.data = nullptr; }},
      {"'lse' is a null pointer", [](SinkArgs& a) { a.lse.data = nullptr; }},
      {"'sinks' is a null pointer", [](SinkArgs& a) { a.sinks = nullptr; }},
      {"'kv_indptr' is a null pointer", [](SinkArgs& a) { a.kv_indptr = nullptr; }},
      {"'out' has -1 tokens", [](SinkArgs& a) { a.out.tokens = -1; }},
      {"'out' has 16777217 tokens", [](SinkArgs& a) { a.out.tokens = a.lse.tokens = SinkPlan::kMaxTokens + 1; }},
      {"'lse' has 3 tokens", [](SinkArgs& a) { a.lse.tokens = 3; }},
      {"'out' has 0 heads", [](SinkArgs& a) { a.out.heads = 0; }},
      {"'out' has 129 heads", [](SinkArgs& a) { a.out.heads = 129; }},
      {"'lse' has 7 heads", [](SinkArgs& a) { a.lse.heads = 7; }},
      {"'out' has head dim 1025", [](SinkArgs& a) { a.out.cols = 1025; }},
      {"'out' has head dim 0", [](SinkArgs& a) { a.out.cols = 0; }},
      {"'lse' has 2 columns", [](SinkArgs& a) { a.lse.cols = 2; }},
      {"'out' has head stride 63", [](SinkArgs& a) { a.out.head_stride = 63; }},
      {"'out' has token stride 959, smaller than its 8 heads span (960)", [](SinkArgs& a) { a.out.token_stride = 959; }},
      {"'lse' has token stride 14", [](SinkArgs& a) { a.lse.token_stride = 14; }},
      {"'out' has a stride outside", [](SinkArgs& a) { a.out.token_stride = SinkPlan::kMaxStride + 1; }},
      {"'lse' has a stride outside", [](SinkArgs& a) { a.lse.head_stride = SinkPlan::kMaxStride + 1; }},
      {"'out' has a stride outside", [](SinkArgs& a) { a.out.token_stride = -1; }},
      {"'kv_indptr' is not aligned", [](SinkArgs& a) { a.kv_indptr = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(a.kv_indptr) + 2); }},
      {"'aiter_padded_heads' is negative", [](SinkArgs& a) { a.aiter_padded_heads = -16; }},
      {"'out' has dtype int32", [](SinkArgs& a) { a.out.dtype = DType::I32; }},
      {"'lse' has dtype bf16", [](SinkArgs& a) { a.lse.dtype = DType::BF16; }},
      {"'out' is not aligned to 2 bytes", [](SinkArgs& a) { a.out.data = reinterpret_cast<char*>(a.out.data) + 1; }},
      {"'lse' is not aligned to 4 bytes", [](SinkArgs& a) { a.lse.data = reinterpret_cast<char*>(a.lse.data) + 2; }},
      {"'sinks' is not aligned", [](SinkArgs& a) { a.sinks = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.sinks) + 1); }},
      {"'lse' overlaps 'out'", [](SinkArgs& a) { a.lse.data = static_cast<char*>(a.out.data) + 64; }},
      // Each view's extent ends with its last token's last head's last element: lse starting
      // on out's last aligned pair of elements, out on lse's last element, both overlap.
      {"'lse' overlaps 'out'",
       [](SinkArgs& a) {
         a.lse.data = past_last_element(a.out) - 2 * sizeof(uint16_t);
       }},
      {"'lse' overlaps 'out'",
       [](SinkArgs& a) {
         a.out.data = past_last_element(a.lse) - sizeof(float);
       }},
      {"'aiter_padded_heads' is 24 for BF16 attention: BF16 allows padded heads {16, 32, 64, 128}",
       [](SinkArgs& a) { a.aiter_padded_heads = 24; }},
      {"'aiter_padded_heads' is 4, fewer than the 8 heads", [](SinkArgs& a) { a.aiter_padded_heads = 4; }},
      {"'aiter_padded_heads' is 32 for FP8 attention: FP8 allows padded heads {16, 128}",
       [](SinkArgs& a) {
         a.aiter_padded_heads = 32;
         a.attn_dtype = AttnDType::FP8;
       }},
      {"gfx942 has no BF16 64-head bucket", [](SinkArgs& a) { a.aiter_padded_heads = 64; a.target = SinkTarget::Gfx942; }},
      {"the target is not named", [](SinkArgs& a) { a.aiter_padded_heads = 64; }},
  };
  std::vector<std::string> failures = refusal_failures<SinkPlan>(good(), bad);
  // Exactly at each limit, accepted (out and lse at far addresses, refusals.h).
  static const LimitCase<SinkArgs> at_limit[] = {
      {"T = 0 with null out, lse, sinks and kv_indptr (an empty batch reads nothing)",
       [](SinkArgs& a) {
         a.out.tokens = a.lse.tokens = 0;
         a.out.data = nullptr;
         a.lse.data = nullptr;
         a.sinks = nullptr;
         a.kv_indptr = nullptr;
       }},
      {"kMaxTokens tokens",
       [](SinkArgs& a) {
         a.out.tokens = a.lse.tokens = SinkPlan::kMaxTokens;
         a.out.data = far_address(1);
         a.lse.data = far_address(2);
       }},
      {"kMaxHeads heads of kMaxDim, strides kMaxStride",
       [](SinkArgs& a) {
         a.out.heads = a.lse.heads = SinkPlan::kMaxHeads;
         a.out.cols = SinkPlan::kMaxDim;
         a.out.head_stride = SinkPlan::kMaxDim;
         a.out.token_stride = a.lse.token_stride = SinkPlan::kMaxStride;
         a.lse.head_stride = 1;
         a.aiter_padded_heads = 128;
         a.out.data = far_address(1);
         a.lse.data = far_address(2);
       }},
      {"out starting where lse's last element ends (lse's row padding is not part of it)",
       [](SinkArgs& a) {
         a.lse.data = far_address(2);
         a.out.data = past_last_element(a.lse);
       }},
      {"one token whose heads are kMaxStride apart (head stride at its limit)",
       [](SinkArgs& a) {
         a.out.tokens = a.lse.tokens = 1;
         a.out.head_stride = a.lse.head_stride = SinkPlan::kMaxStride;
         a.out.data = far_address(1);
         a.lse.data = far_address(2);
       }},
      {"one token of one head with strides 0 (a size-1 dimension's stride is never used)",
       [](SinkArgs& a) {
         a.out.tokens = a.lse.tokens = 1;
         a.out.heads = a.lse.heads = 1;
         a.out.head_stride = a.out.token_stride = a.lse.head_stride = a.lse.token_stride = 0;
       }},
  };
  for (const std::string& f : limit_failures<SinkPlan>(good(), at_limit)) failures.push_back(f);
  // What the policy allows is accepted.
  for (auto [p, dt, tg] : {std::tuple{16, AttnDType::BF16, SinkTarget::AnyBuilt}, {32, AttnDType::BF16, SinkTarget::Gfx942},
                           {64, AttnDType::BF16, SinkTarget::Gfx950}, {128, AttnDType::BF16, SinkTarget::AnyBuilt},
                           {16, AttnDType::FP8, SinkTarget::Gfx942}, {128, AttnDType::FP8, SinkTarget::Gfx950}}) {
    SinkArgs a = good();
    a.aiter_padded_heads = p;
    a.attn_dtype = dt;
    a.target = tg;
    try {
      SinkPlan plan(a);
    } catch (const std::exception& e) {
      failures.push_back(std::string("an allowed bucket was refused: ") + e.what());
    }
  }
  std::vector<uint16_t> after;
  out.download(after, s);
  hy4::rt::synchronize(s);
  if (after != poison) failures.push_back("a refused plan wrote to out");
  if (classes) *classes = static_cast<int>(sizeof bad / sizeof bad[0]);
  return failures;
}

std::vector<ConformanceRow> conform_sink(const ConformanceOptions& o) {
  OpBattery<SinkCase, SinkOutput> b;
  b.op = "sink";
  b.bound_name = "float64 bound";
  b.cases = [](const ConformanceOptions& opt) {
    std::vector<std::pair<SinkCase, std::string>> v;
    for (uint64_t seed : opt.seeds) {
      SinkShape prod = sink_hyv4_shape(16);
      prod.values = SinkValues::Mixed;
      v.emplace_back(make_sink_case(seed, prod), "conformance.sink.hyv4." + std::to_string(seed));
      for (int k = 0; k < opt.cases_per_seed; ++k) {
        const uint64_t cs = seed * 1000003u + k;
        v.emplace_back(random_sink_case(cs, 12), "conformance.sink.random." + std::to_string(cs));
      }
    }
    return v;
  };
  b.run = run_sink_eager;
  b.check = check_sink;
  b.to_file = sink_to_file;
  b.bound_worst = [](const Verdict& v) {
    std::ostringstream os;
    os.precision(3);
    os << v.worst_ulp << " ulp (bound 0.5 ulp + conditioned part)";
    return os.str();
  };
  b.replays = [](const ConformanceOptions& opt, hy4::rt::Stream s) {
    const uint64_t seed = opt.seeds.empty() ? 1 : opt.seeds[0];
    return std::vector<Replays<SinkCase, SinkOutput>>{sink_graph_scenario(seed, 8, 6, s)};
  };
  b.warp_case = [](uint64_t seed) { return random_sink_case(seed, 8); };
  b.bad_arguments = sink_bad_argument_failures;
  return run_battery(b, o);
}

}  // namespace hy4::harness
