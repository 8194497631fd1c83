#include "gate_harness.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <random>
#include <sstream>

#include "device_buffer.h"
#include "fault_case.h"
#include "gate.h"
#include "gate_reference.h"
#include "numerics.h"
#include "platform/hy4_numeric.h"

namespace hy4::harness {

int64_t gate_buffer_elems(int64_t T, int64_t W, int64_t stride, int64_t offset) {
  return offset + (T > 0 ? (T - 1) * stride + W : 0);
}

GateCase make_gate_case(uint64_t seed, const GateShape& shape) {
  GateCase c;
  c.seed = seed;
  c.shape = shape;
  std::mt19937_64 rng(seed);
  const int64_t T = shape.T, W = shape.W;
  c.attn.resize(gate_buffer_elems(T, W, c.attn_stride(), shape.attn_offset));
  c.gate.resize(gate_buffer_elems(T, W, c.gate_stride(), shape.gate_offset));
  for (auto& v : c.attn) v = random_bf16(rng, shape.special_rate);
  for (auto& v : c.gate) v = random_gate_bf16(rng, shape.special_rate);
  if (!shape.in_place) {
    c.out_init.resize(gate_buffer_elems(T, W, c.out_stride(), shape.out_offset));
    for (auto& v : c.out_init) v = static_cast<uint16_t>(0xFFC0 | (rng() & 0x3F));  // poison: NaN patterns
  }
  return c;
}

GateCase random_gate_case(uint64_t seed, int64_t max_T, int64_t max_W) {
  std::mt19937_64 rng(seed ^ 0x6a7e5eedULL);
  GateShape s;
  s.T = static_cast<int64_t>(rng() % (max_T + 1));
  static const int64_t widths[] = {2048, 2047, 2049, 2056, 8, 16, 7, 1, 512, 256, 1000};
  const uint64_t pick = rng() % 3;
  if (pick == 0)
    s.W = std::min<int64_t>(max_W, widths[rng() % (sizeof widths / sizeof widths[0])]);
  else
    s.W = 1 + static_cast<int64_t>(rng() % std::min<int64_t>(max_W, pick == 1 ? 40 : max_W));
  auto pad = [&] { return (rng() % 3 == 0) ? 0 : static_cast<int64_t>(rng() % 17); };
  auto off = [&] { return (rng() % 2 == 0) ? 0 : static_cast<int64_t>(rng() % 9); };
  s.attn_pad = pad();
  s.gate_pad = pad();
  s.out_pad = pad();
  s.attn_offset = off();
  s.gate_offset = off();
  s.out_offset = off();
  s.in_place = rng() % 5 == 0;
  s.special_rate = (rng() % 4 == 0) ? 0.5 : 0.05;
  return make_gate_case(seed, s);
}

CaseFile gate_to_file(const GateCase& c) {
  CaseFile f;
  f.op = "gate";
  f.ints = {{"seed", static_cast<int64_t>(c.seed)}, {"T", c.shape.T}, {"W", c.shape.W},
            {"attn_pad", c.shape.attn_pad}, {"gate_pad", c.shape.gate_pad}, {"out_pad", c.shape.out_pad},
            {"attn_offset", c.shape.attn_offset}, {"gate_offset", c.shape.gate_offset},
            {"out_offset", c.shape.out_offset}, {"in_place", c.shape.in_place ? 1 : 0}};
  if (!c.origin.empty()) f.text["origin"] = c.origin;
  f.put16("attn", c.attn);
  f.put16("gate", c.gate);
  if (!c.shape.in_place) f.put16("out_init", c.out_init);
  return f;
}

GateCase gate_from_file(const CaseFile& f) {
  if (f.op != "gate") throw CaseFileError("case file holds op '" + f.op + "', not 'gate'");
  GateCase c;
  c.seed = static_cast<uint64_t>(f.get_or("seed", 0));
  // every size range-checked before a span is computed from it (no overflow)
  c.shape.T = f.get_in("T", 0, GatePlan::kMaxRows);
  c.shape.W = f.get_in("W", 1, GatePlan::kMaxWidth);
  c.shape.attn_pad = f.get_or_in("attn_pad", 0, 0, 1 << 20);
  c.shape.gate_pad = f.get_or_in("gate_pad", 0, 0, 1 << 20);
  c.shape.out_pad = f.get_or_in("out_pad", 0, 0, 1 << 20);
  c.shape.attn_offset = f.get_or_in("attn_offset", 0, 0, 1 << 20);
  c.shape.gate_offset = f.get_or_in("gate_offset", 0, 0, 1 << 20);
  c.shape.out_offset = f.get_or_in("out_offset", 0, 0, 1 << 20);
  c.shape.in_place = f.get_or_in("in_place", 0, 0, 1) != 0;
  if (f.generated()) {
    const GateShape& s = c.shape;
    f.check_generated_size(gate_buffer_elems(s.T, s.W, c.attn_stride(), s.attn_offset) +
                           gate_buffer_elems(s.T, s.W, c.gate_stride(), s.gate_offset) +
                           gate_buffer_elems(s.T, s.W, c.out_stride(), s.out_offset));
    GateCase g = make_gate_case(c.seed, s);
    g.origin = f.text_or("origin", "generated from seed and shape");
    return g;
  }
  c.attn = f.tensor16("attn");
  c.gate = f.tensor16("gate");
  if (!c.shape.in_place) c.out_init = f.tensor16("out_init");
  c.origin = f.text_or("origin", "");
  const int64_t T = c.shape.T, W = c.shape.W;
  if (T < 0 || W < 1 || c.shape.attn_pad < 0 || c.shape.gate_pad < 0 || c.shape.out_pad < 0)
    throw CaseFileError("gate case: negative shape or padding");
  if (static_cast<int64_t>(c.attn.size()) < gate_buffer_elems(T, W, c.attn_stride(), c.shape.attn_offset) ||
      static_cast<int64_t>(c.gate.size()) < gate_buffer_elems(T, W, c.gate_stride(), c.shape.gate_offset) ||
      (!c.shape.in_place &&
       static_cast<int64_t>(c.out_init.size()) < gate_buffer_elems(T, W, c.out_stride(), c.shape.out_offset)))
    throw CaseFileError("gate case: a tensor is shorter than its shape needs");
  return c;
}

namespace {

struct GateDeviceBuffers {
  DeviceBuffer<uint16_t> attn, gate, out;
  GateArgs args;
  GateDeviceBuffers(const GateCase& c) : attn(c.attn.size()), gate(c.gate.size()), out(c.out_init.size()) {
    const int64_t T = c.shape.T, W = c.shape.W;
    args.attn = MatrixView{attn.get() + c.shape.attn_offset, DType::BF16, T, W, c.attn_stride()};
    args.gate = MatrixView{gate.get() + c.shape.gate_offset, DType::BF16, T, W, c.gate_stride()};
    args.out = c.shape.in_place ? args.attn
                                : MatrixView{out.get() + c.shape.out_offset, DType::BF16, T, W, c.out_stride()};
  }
  void upload(const GateCase& c, hy4::rt::Stream s) {
    attn.upload(c.attn, s);
    gate.upload(c.gate, s);
    if (!c.shape.in_place) out.upload(c.out_init, s);
  }
  std::vector<uint16_t> download(const GateCase& c, hy4::rt::Stream s) {
    std::vector<uint16_t> h;
    (c.shape.in_place ? attn : out).download(h, s);
    hy4::rt::synchronize(s);
    return h;
  }
};

std::string f32s(float v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

}  // namespace

std::vector<uint16_t> run_gate_eager(const GateCase& c, hy4::rt::Stream s) {
  GateDeviceBuffers b(c);
  GatePlan plan(b.args);
  const KeepCaseOnFault keep([&] { return gate_to_file(c); }, false);
  b.upload(c, s);
  hy4::rt::begin_case_schedule(c.seed);  // the CPU executor: the same schedule whenever this case runs
  plan.launch(s);
  return b.download(c, s);
}

std::vector<uint16_t> gate_expected(const GateCase& c) {
  std::vector<uint16_t> out = c.shape.in_place ? c.attn : c.out_init;
  const int64_t out_off = c.shape.in_place ? c.shape.attn_offset : c.shape.out_offset;
  ref::gate_bit_model(c.attn.data() + c.shape.attn_offset, c.attn_stride(), c.gate.data() + c.shape.gate_offset,
                      c.gate_stride(), out.data() + out_off, c.out_stride(), c.shape.T, c.shape.W);
  return out;
}

// The float64 bound.  Kernel: out = RN16(a * s16), s16 = RN16(sigmoid_f32(g)); a * s16
// is exact in fp32 (two 8-bit significands) for normal results.  sigmoid_f32 is within
// 2.5 fp32 ulp of sigmoid (exhaustive test), so |s16 - sigma| <= (2^-8 + 2^-21)*sigma and
// |a*s16 - a*sigma| < 1 bf16 ulp of the exact result (+ a hair).  Rounding both sides to
// bf16 adds at most half an ulp each: |out - RN16(a*sigma)| <= 2 ulp.  Where sigma is
// below FLT_MIN (gate < -87.3) s16 keeps few or no bits (sigmoid_f32, like eager
// PyTorch, returns 0 below -88.72), so there the promise is absolute:
// |out - a*sigma| <= |a| * (half a bf16 quantum of sigma + 2^-126) + 1.5 bf16 ulp.
static constexpr double kGateBoundUlp = 2.0;

Verdict check_gate(const GateCase& c, const std::vector<uint16_t>& got) {
  Verdict v;
  v.bound_ulp = kGateBoundUlp;
  const std::vector<uint16_t> want = gate_expected(c);
  const int64_t T = c.shape.T, W = c.shape.W;
  const int64_t out_off = c.shape.in_place ? c.shape.attn_offset : c.shape.out_offset;
  const int64_t os = c.out_stride();
  v.elements = T * W;
  if (got.size() < want.size()) {
    v.bit_mismatches = 1;
    v.note("out buffer came back with " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size()));
    return v;
  }
  // 1. bitwise, the whole buffer: valid elements vs the bit model, everything else untouched.
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (got[k] == want[k]) continue;
    ++v.bit_mismatches;
    const int64_t rel = static_cast<int64_t>(k) - out_off;
    const int64_t t = rel >= 0 ? rel / os : -1, i = rel >= 0 ? rel % os : -1;
    std::ostringstream d;
    if (rel < 0 || t >= T || i >= W) {
      d << "out buffer[" << k << "] outside the view was written: " << hex16(got[k]) << ", was " << hex16(want[k]);
    } else {
      const uint16_t a = c.attn[c.shape.attn_offset + t * c.attn_stride() + i];
      const uint16_t g = c.gate[c.shape.gate_offset + t * c.gate_stride() + i];
      d << "out[t=" << t << ", i=" << i << "]: got " << hex16(got[k]) << " (" << f32s(bf16_to_f32(got[k]))
        << "), bit model " << hex16(want[k]) << " (" << f32s(bf16_to_f32(want[k])) << "); attn " << hex16(a) << " ("
        << f32s(bf16_to_f32(a)) << "), gate " << hex16(g) << " (" << f32s(bf16_to_f32(g)) << ")";
    }
    v.note(d.str());
  }
  // 2. float64 reference within the bound.
  if (T > 0) {
    std::vector<double> exact(static_cast<std::size_t>(T * W));
    ref::gate_math(c.attn.data() + c.shape.attn_offset, c.attn_stride(), c.gate.data() + c.shape.gate_offset,
                   c.gate_stride(), exact.data(), T, W);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < W; ++i) {
        const double x = exact[t * W + i];
        const uint16_t o = got[out_off + t * os + i];
        const uint16_t a = c.attn[c.shape.attn_offset + t * c.attn_stride() + i];
        const uint16_t g = c.gate[c.shape.gate_offset + t * c.gate_stride() + i];
        const double sigma = 1.0 / (1.0 + std::exp(-static_cast<double>(bf16_to_f32(g))));
        bool ok;
        double ulp = 0;
        const float af = bf16_to_f32(a);
        if (std::isinf(af) && !std::isnan(x)) {
          // inf * sigma: sigma > 0 in float64, but the promised bf16 rounding of the
          // sigmoid can make it 0 (gate < ~-92), and then inf * 0 = NaN, as in PyTorch.
          const bool s16_zero = bf16_from_f32(sigmoid_f32(bf16_to_f32(g))) == 0;
          ok = s16_zero ? bf16_is_nan(o) : (o == a);
        } else if (std::isnan(x) || bf16_is_nan(o)) {
          ok = std::isnan(x) && bf16_is_nan(o);
        } else {
          const uint16_t r = bf16_from_f64(x);
          ulp = static_cast<double>(bf16_ulp_distance(o, r));
          const bool tiny = sigma < 0x1p-126 || std::fabs(x) < 0x1p-126;
          if (!tiny) {
            ok = ulp <= kGateBoundUlp;
            v.worst_ulp = std::max(v.worst_ulp, ulp);
          } else {
            int e = 0;
            std::frexp(std::max(sigma, 0x1p-200), &e);
            const double s_quantum = std::ldexp(1.0, std::max(e - 1, -126) - 7);
            std::frexp(std::max(std::fabs(x), 0x1p-200), &e);
            const double out_ulp = std::ldexp(1.0, std::max(e - 1, -126) - 7);
            const double allowed = std::fabs(static_cast<double>(bf16_to_f32(a))) * (0.5 * s_quantum + 0x1p-126) +
                                   1.5 * out_ulp;
            ok = std::fabs(static_cast<double>(bf16_to_f32(o)) - x) <= allowed;
          }
        }
        if (!ok) {
          ++v.bound_violations;
          std::ostringstream d;
          d.precision(17);
          d << "out[t=" << t << ", i=" << i << "]: got " << hex16(o) << " (" << bf16_to_f32(o) << "), float64 " << x
            << " (" << ulp << " ulp); attn " << hex16(a) << ", gate " << hex16(g);
          v.note(d.str());
        }
      }
  }
  return v;
}

std::vector<std::vector<uint16_t>> run_gate_replays(const GateCase& capture, const std::vector<GateCase>& data,
                                                    const std::vector<int64_t>& real_rows, hy4::rt::Stream s,
                                                    std::vector<GateCase>* as_run) {
  GateDeviceBuffers b(capture);
  GatePlan plan(b.args);
  const KeepCaseOnFault keep([&] { return gate_to_file(capture); }, true);
  b.upload(capture, s);
  hy4::rt::synchronize(s);
  CapturedGraph graph(s, [&](hy4::rt::Stream cs) { plan.launch(cs); });

  GateCase current = capture;  // host mirror of what the device buffers hold
  std::mt19937_64 rng(capture.seed ^ 0x9a9e);
  std::vector<std::vector<uint16_t>> outs;
  for (std::size_t k = 0; k < data.size(); ++k) {
    const GateCase& d = data[k];
    const int64_t r = std::min(real_rows[k], capture.shape.T);
    // New data for the real rows; graph-padded rows keep stale data, some turned NaN.
    auto refresh = [&](std::vector<uint16_t>& buf, const std::vector<uint16_t>& src, int64_t off, int64_t stride) {
      for (int64_t t = 0; t < capture.shape.T; ++t)
        for (int64_t i = 0; i < capture.shape.W; ++i) {
          const int64_t idx = off + t * stride + i;
          if (t < r)
            buf[idx] = src[idx % src.size()];
          else if (rng() % 7 == 0)
            buf[idx] = 0x7FC0;
        }
    };
    refresh(current.attn, d.attn, capture.shape.attn_offset, capture.attn_stride());
    refresh(current.gate, d.gate, capture.shape.gate_offset, capture.gate_stride());
    if (!current.shape.in_place)
      for (auto& o : current.out_init) o = static_cast<uint16_t>(0xFFC0 | (rng() & 0x3F));  // poison
    b.upload(current, s);
    hy4::rt::begin_case_schedule(current.seed);  // as in run_gate_eager: the replayed case's own schedule
    graph.replay();
    outs.push_back(b.download(current, s));
    if (as_run) as_run->push_back(current);
  }
  return outs;
}

}  // namespace hy4::harness

// ---- bad arguments ----------------------------------------------------------------
#include "conformance.h"
#include "refusals.h"

namespace hy4::harness {

std::vector<std::string> gate_bad_argument_failures(int* classes) {
  DeviceBuffer<uint16_t> a(64 * 40), g(64 * 40), o(64 * 40);
  ScopedStream s;
  std::vector<uint16_t> poison(o.size(), 0xBEEF);
  o.upload(poison, s);
  auto good = [&] {
    GateArgs x;
    x.attn = MatrixView{a.get(), DType::BF16, 4, 32, 40};
    x.gate = MatrixView{g.get(), DType::BF16, 4, 32, 32};
    x.out = MatrixView{o.get(), DType::BF16, 4, 32, 36};
    return x;
  };
  static const RefusalClass<GateArgs> bad[] = {
      {"'gate' is a null pointer", [](GateArgs& x) { x.gate.data = nullptr; }},
      {"'out' is a null pointer", [](GateArgs& x) { x.out.data = nullptr; }},
      {"'attn' has -1 rows", [](GateArgs& x) { x.attn.rows = -1; }},
      {"'attn' has 16777217 rows", [](GateArgs& x) { x.attn.rows = x.gate.rows = x.out.rows = GatePlan::kMaxRows + 1; }},
      {"'gate' has 3 rows", [](GateArgs& x) { x.gate.rows = 3; }},
      {"'attn' has 0 columns", [](GateArgs& x) { x.attn.cols = 0; }},
      {"'attn' has 16777217 columns", [](GateArgs& x) { x.attn.cols = GatePlan::kMaxWidth + 1; }},
      {"'out' has 31 columns", [](GateArgs& x) { x.out.cols = 31; }},
      {"'gate' has row stride 31, smaller than its row of 32", [](GateArgs& x) { x.gate.row_stride = 31; }},
      {"'out' has row stride 1073741825", [](GateArgs& x) { x.out.row_stride = GatePlan::kMaxStride + 1; }},
      {"'attn' has dtype fp32; only bf16", [](GateArgs& x) { x.attn.dtype = DType::F32; }},
      {"'out' at", [](GateArgs& x) { x.out.data = static_cast<char*>(x.out.data) + 1; }},
      {"'out' overlaps 'gate'",
       [](GateArgs& x) {
         x.out = x.gate;
         x.out.data = static_cast<uint16_t*>(x.gate.data) + 32;
       }},
  };
  std::vector<std::string> failures = refusal_failures<GatePlan>(good(), bad);
  // Exactly at each limit, accepted (in place: one view for all three, so the rows past the
  // buffers cannot partly overlap).
  static const LimitCase<GateArgs> at_limit[] = {
      {"kMaxRows rows", [](GateArgs& x) { x.attn.rows = GatePlan::kMaxRows; x.gate = x.out = x.attn; }},
      {"kMaxWidth columns",
       [](GateArgs& x) {
         x.attn.rows = 1;
         x.attn.cols = x.attn.row_stride = GatePlan::kMaxWidth;
         x.gate = x.out = x.attn;
       }},
      {"row stride kMaxStride", [](GateArgs& x) { x.attn.row_stride = GatePlan::kMaxStride; x.gate = x.out = x.attn; }},
      // Layouts at the edge of the checks, accepted (op_common's shared checks):
      {"T = 0 with null attn, gate and out (an empty tensor's data pointer may be null)",
       [](GateArgs& x) {
         x.attn.rows = x.gate.rows = x.out.rows = 0;
         x.attn.data = x.gate.data = x.out.data = nullptr;
       }},
      {"one row with row strides 1 and 0 (a size-1 dimension's stride is never used: a [W, 1] view transposed)",
       [](GateArgs& x) {
         x.attn.rows = x.gate.rows = x.out.rows = 1;
         x.attn.row_stride = 1;
         x.gate.row_stride = 0;
       }},
      {"out starting where attn's last row ends (attn's row padding is not part of it)",
       [](GateArgs& x) { x.out.data = past_last_element(x.attn); }},
  };
  for (const std::string& f : limit_failures<GatePlan>(good(), at_limit)) failures.push_back(f);
  std::vector<uint16_t> after;
  o.download(after, s);
  hy4::rt::synchronize(s);
  if (after != poison) failures.push_back("a refused plan wrote to out");
  if (classes) *classes = static_cast<int>(sizeof bad / sizeof bad[0]);
  return failures;
}

Replays<GateCase, std::vector<uint16_t>> gate_graph_scenario(uint64_t seed, int64_t T, bool in_place,
                                                             int replays, hy4::rt::Stream s) {
  GateShape shape;
  shape.T = T;
  shape.W = 2048;
  shape.out_pad = in_place ? 0 : 8;
  shape.in_place = in_place;
  const GateCase capture = make_gate_case(seed, shape);
  std::vector<GateCase> data;
  std::vector<int64_t> real_rows;
  for (int k = 0; k < replays; ++k) {
    data.push_back(make_gate_case(seed + 1 + k, shape));
    real_rows.push_back((k * 5) % (T + 1));  // 0..T real rows, the rest graph padding
  }
  Replays<GateCase, std::vector<uint16_t>> r;
  r.outs = run_gate_replays(capture, data, real_rows, s, &r.as_run);
  return r;
}

std::vector<ConformanceRow> conform_gate(const ConformanceOptions& o) {
  OpBattery<GateCase, std::vector<uint16_t>> b;
  b.op = "gate";
  b.bound_name = "float64 bound";
  b.cases = [](const ConformanceOptions& opt) {
    std::vector<std::pair<GateCase, std::string>> v;
    for (uint64_t seed : opt.seeds) {
      GateShape prod;  // HY V4 TP8 production shape
      prod.T = 64;
      prod.W = 2048;
      v.emplace_back(make_gate_case(seed, prod), "conformance.gate.production." + std::to_string(seed));
      for (int k = 0; k < opt.cases_per_seed; ++k) {
        const uint64_t cs = seed * 1000003u + k;
        v.emplace_back(random_gate_case(cs, 24, 3000), "conformance.gate.random." + std::to_string(cs));
      }
    }
    return v;
  };
  b.run = run_gate_eager;
  b.check = check_gate;
  b.to_file = gate_to_file;
  b.bound_worst = [](const Verdict& v) {
    return std::to_string(static_cast<int>(v.worst_ulp)) + " ulp (bound " + std::to_string(static_cast<int>(v.bound_ulp)) + ")";
  };
  b.replays = [](const ConformanceOptions& opt, hy4::rt::Stream s) {
    const uint64_t seed = opt.seeds.empty() ? 1 : opt.seeds[0];
    return std::vector<Replays<GateCase, std::vector<uint16_t>>>{gate_graph_scenario(seed, 32, false, 16, s),
                                                                  gate_graph_scenario(seed, 32, true, 16, s)};
  };
  b.warp_case = [](uint64_t seed) { return random_gate_case(seed, 16, 2100); };
  b.bad_arguments = gate_bad_argument_failures;
  return run_battery(b, o);
}

}  // namespace hy4::harness
