#include "topk_harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "device_buffer.h"
#include "fault_case.h"
#include "numerics.h"
#include "refusals.h"
#include "platform/hy4_numeric.h"
#include "topk.h"
#include "topk_reference.h"

namespace hy4::harness {

int64_t TopkCase::real_rows() const {
  if (!shape.has_num_rows) return shape.T;
  return std::clamp<int64_t>(shape.num_rows, 0, shape.T);
}

namespace {

int64_t span(int64_t T, int64_t cols, int64_t stride, int64_t offset) {
  return offset + (T > 0 ? (T - 1) * stride + cols : 0);
}

uint32_t fbits(float f) { return f32_bits(f); }

float next_up(float f, int n) {
  uint32_t u = f32_bits(f);
  if (f >= 0) u += n; else u -= n;
  return f32_from_bits(u);
}

void fill_row(std::mt19937_64& rng, TopkValues mode, float* logit, int E) {
  std::normal_distribution<float> n2(0.0f, 2.0f);
  std::uniform_real_distribution<float> u(0, 1);
  switch (mode) {
    case TopkValues::Normal:
    case TopkValues::Mixed:
      for (int e = 0; e < E; ++e) logit[e] = n2(rng);
      break;
    case TopkValues::Ties: {
      static const float v[] = {-1.0f, 0.0f, 1.0f, 2.0f};
      for (int e = 0; e < E; ++e) logit[e] = v[rng() % 4];
      break;
    }
    case TopkValues::UlpApart: {
      const float L = n2(rng);
      for (int e = 0; e < E; ++e) logit[e] = L;
      break;
    }
    case TopkValues::Specials: {
      static const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 88.0f, -88.0f, -100.0f};
      for (int e = 0; e < E; ++e) logit[e] = u(rng) < 0.3f ? sp[rng() % 10] : n2(rng);
      break;
    }
    case TopkValues::Underflow:
      for (int e = 0; e < E; ++e) logit[e] = -90.0f - 30.0f * u(rng);
      break;
  }
}

}  // namespace

TopkCase make_topk_case(uint64_t seed, const TopkShape& shape) {
  TopkCase c;
  c.seed = seed;
  c.shape = shape;
  std::mt19937_64 rng(seed);
  const int E = shape.E;
  c.logits.resize(span(shape.T, E, c.logits_stride(), shape.logits_offset));
  for (auto& v : c.logits) v = shape.bf16 ? static_cast<uint32_t>(rng() & 0xFFFF) : static_cast<uint32_t>(rng());  // garbage in gaps
  std::vector<float> row(E);
  for (int64_t t = 0; t < shape.T; ++t) {
    TopkValues mode = shape.values;
    if (mode == TopkValues::Mixed) mode = static_cast<TopkValues>(rng() % 5);
    fill_row(rng, mode, row.data(), E);
    for (int e = 0; e < E; ++e) {
      const int64_t idx = shape.logits_offset + t * c.logits_stride() + e;
      c.logits[idx] = shape.bf16 ? bf16_from_f32(row[e]) : fbits(row[e]);
    }
  }
  // bias: one per case, drawn for the case's dominant mode
  c.bias.resize(E);
  std::normal_distribution<float> nb(0.0f, 0.05f);
  std::uniform_real_distribution<float> u(0, 1);
  const float b0 = nb(rng);
  for (int e = 0; e < E; ++e) {
    float b = nb(rng);
    switch (shape.values) {
      case TopkValues::Ties: b = (rng() % 2) ? 0.25f : 0.0f; break;
      case TopkValues::UlpApart: b = next_up(b0, static_cast<int>(rng() % 3)); break;
      case TopkValues::Specials:
        if (u(rng) < 0.1f) b = (rng() % 3 == 0) ? NAN : ((rng() % 2) ? INFINITY : -INFINITY);
        break;
      case TopkValues::Mixed:
        if (rng() % 4 == 0) b = (rng() % 2) ? 0.25f : 0.0f;
        break;
      default: break;
    }
    c.bias[e] = fbits(b);
  }
  c.weights_init.resize(span(shape.T, shape.k, c.weights_stride(), 0));
  c.ids_init.resize(span(shape.T, shape.k, c.ids_stride(), 0));
  for (auto& v : c.weights_init) v = 0x7fbad000u | static_cast<uint32_t>(rng() & 0xFFF);  // NaN poison
  for (auto& v : c.ids_init) v = 0xdead0000u | static_cast<uint32_t>(rng() & 0xFFFF);
  return c;
}

TopkCase random_topk_case(uint64_t seed, int64_t max_T) {
  std::mt19937_64 rng(seed ^ 0x70b4ULL);
  TopkShape s;
  s.T = static_cast<int64_t>(rng() % (max_T + 1));
  static const int Es[] = {256, 256, 1, 2, 7, 8, 33, 64, 100, 255, 257, 384, 512};
  s.E = Es[rng() % (sizeof Es / sizeof Es[0])];
  static const int ks[] = {8, 8, 1, 2, 4, 9, 16, 31, 32};
  s.k = std::min(s.E, ks[rng() % (sizeof ks / sizeof ks[0])]);
  s.bf16 = rng() % 3 == 0;
  s.logits_pad = (rng() % 2) ? 0 : static_cast<int64_t>(rng() % 9);
  s.weights_pad = static_cast<int64_t>(rng() % 3);
  s.ids_pad = static_cast<int64_t>(rng() % 4);
  s.logits_offset = (rng() % 2) ? 0 : static_cast<int64_t>(rng() % 5);
  s.renormalize = rng() % 4 != 0;
  s.rsf = (rng() % 2) ? 2.827f : 1.0f;
  s.has_num_rows = rng() % 3 == 0;
  s.num_rows = static_cast<int64_t>(rng() % (s.T + 3)) - 1;
  s.values = static_cast<TopkValues>(rng() % 6);
  s.path = static_cast<int>(rng() % 3);
  return make_topk_case(seed, s);
}

CaseFile topk_to_file(const TopkCase& c) {
  CaseFile f;
  f.op = "topk";
  const TopkShape& s = c.shape;
  f.ints = {{"seed", static_cast<int64_t>(c.seed)}, {"T", s.T}, {"E", s.E}, {"k", s.k}, {"bf16", s.bf16},
            {"logits_pad", s.logits_pad}, {"weights_pad", s.weights_pad}, {"ids_pad", s.ids_pad},
            {"logits_offset", s.logits_offset}, {"renormalize", s.renormalize}, {"rsf_bits", fbits(s.rsf)},
            {"has_num_rows", s.has_num_rows}, {"num_rows", s.num_rows}, {"values", static_cast<int>(s.values)},
            {"path", s.path}};
  if (!c.origin.empty()) f.text["origin"] = c.origin;
  f.put32("logits", c.logits);
  f.put32("bias", c.bias);
  f.put32("weights_init", c.weights_init);
  f.put32("ids_init", c.ids_init);
  return f;
}

TopkCase topk_from_file(const CaseFile& f) {
  if (f.op != "topk") throw CaseFileError("case file holds op '" + f.op + "', not 'topk'");
  TopkCase c;
  TopkShape& s = c.shape;
  c.seed = static_cast<uint64_t>(f.get_or("seed", 0));
  // every size range-checked before a span is computed from it (no overflow)
  s.T = f.get_in("T", 0, TopkPlan::kMaxRows);
  s.E = static_cast<int>(f.get_in("E", 1, TopkPlan::kMaxExperts));
  s.k = static_cast<int>(f.get_in("k", 1, std::min<int64_t>(s.E, TopkPlan::kMaxK)));
  s.bf16 = f.get_in("bf16", 0, 1) != 0;
  s.logits_pad = f.get_or_in("logits_pad", 0, 0, 1 << 20);
  s.weights_pad = f.get_or_in("weights_pad", 0, 0, 1 << 20);
  s.ids_pad = f.get_or_in("ids_pad", 0, 0, 1 << 20);
  s.logits_offset = f.get_or_in("logits_offset", 0, 0, 1 << 20);
  s.renormalize = f.get_in("renormalize", 0, 1) != 0;
  s.rsf = f32_from_bits(static_cast<uint32_t>(f.get_in("rsf_bits", 0, 0xFFFFFFFFLL)));
  s.has_num_rows = f.get_or_in("has_num_rows", 0, 0, 1) != 0;
  s.num_rows = f.get_or_in("num_rows", 0, -(int64_t{1} << 31), (int64_t{1} << 31) - 1);
  s.values = static_cast<TopkValues>(f.get_or_in("values", 0, 0, 5));
  s.path = static_cast<int>(f.get_or_in("path", 0, 0, 2));
  if (f.generated()) {
    f.check_generated_size(span(s.T, s.E, c.logits_stride(), s.logits_offset) + s.E +
                           span(s.T, s.k, c.weights_stride(), 0) + span(s.T, s.k, c.ids_stride(), 0));
    TopkCase g = make_topk_case(c.seed, s);
    g.origin = f.text_or("origin", "generated from seed and shape");
    return g;
  }
  c.logits = f.tensor32("logits");
  c.bias = f.tensor32("bias");
  c.weights_init = f.tensor32("weights_init");
  c.ids_init = f.tensor32("ids_init");
  c.origin = f.text_or("origin", "");
  if (s.T < 0 || s.E < 1 || s.k < 1 || s.logits_pad < 0 || s.weights_pad < 0 || s.ids_pad < 0 || s.logits_offset < 0)
    throw CaseFileError("topk case: negative shape or padding");
  if (static_cast<int64_t>(c.logits.size()) < span(s.T, s.E, c.logits_stride(), s.logits_offset) ||
      static_cast<int64_t>(c.bias.size()) < s.E ||
      static_cast<int64_t>(c.weights_init.size()) < span(s.T, s.k, c.weights_stride(), 0) ||
      static_cast<int64_t>(c.ids_init.size()) < span(s.T, s.k, c.ids_stride(), 0))
    throw CaseFileError("topk case: a tensor is shorter than its shape needs");
  return c;
}

namespace {

struct TopkDeviceBuffers {
  DeviceBuffer<uint32_t> logits, bias, weights, ids;
  DeviceBuffer<int32_t> num_rows;
  TopkArgs args;
  explicit TopkDeviceBuffers(const TopkCase& c, bool with_count)
      : logits(c.logits.size()), bias(c.bias.size()), weights(c.weights_init.size()), ids(c.ids_init.size()),
        num_rows(1) {
    const TopkShape& s = c.shape;
    const int64_t off = s.logits_offset;
    void* lp = s.bf16 ? static_cast<void*>(reinterpret_cast<uint16_t*>(logits.get()) + off)
                      : static_cast<void*>(logits.get() + off);
    args.logits = MatrixView{lp, s.bf16 ? DType::BF16 : DType::F32, s.T, s.E, c.logits_stride()};
    args.bias = reinterpret_cast<const float*>(bias.get());
    args.k = s.k;
    args.renormalize = s.renormalize;
    args.routed_scaling_factor = s.rsf;
    args.num_rows = with_count ? num_rows.get() : nullptr;
    args.weights = MatrixView{weights.get(), DType::F32, s.T, s.k, c.weights_stride()};
    args.ids = MatrixView{ids.get(), DType::I32, s.T, s.k, c.ids_stride()};
    args.path = static_cast<TopkPath>(s.path);
  }
  void upload(const TopkCase& c, hy4::rt::Stream st) {
    if (c.shape.bf16) {  // bf16 logits live packed in the buffer
      std::vector<uint16_t> h(c.logits.begin(), c.logits.end());
      hy4::rt::copy_to_device(logits.get(), h.data(), h.size() * 2, st);
      hy4::rt::synchronize(st);
    } else {
      logits.upload(c.logits, st);
    }
    bias.upload(c.bias, st);
    weights.upload(c.weights_init, st);
    ids.upload(c.ids_init, st);
    const int32_t n = static_cast<int32_t>(c.shape.num_rows);
    hy4::rt::copy_to_device(num_rows.get(), &n, sizeof n, st);
    hy4::rt::synchronize(st);
  }
  TopkOutput download(hy4::rt::Stream st) {
    TopkOutput o;
    weights.download(o.weights, st);
    ids.download(o.ids, st);
    hy4::rt::synchronize(st);
    return o;
  }
};

double ulp32_at(double v) {
  int e = 0;
  std::frexp(std::fabs(v), &e);
  return std::ldexp(1.0, std::max(e - 24, -149));
}

}  // namespace

TopkOutput run_topk_eager(const TopkCase& c, hy4::rt::Stream s) {
  TopkDeviceBuffers b(c, c.shape.has_num_rows);
  TopkPlan plan(b.args);
  const KeepCaseOnFault keep([&] { return topk_to_file(c); }, false);
  b.upload(c, s);
  hy4::rt::begin_case_schedule(c.seed);  // the CPU executor: the same schedule whenever this case runs
  plan.launch(s);
  return b.download(s);
}

namespace {
ref::TopkInput ref_input(const TopkCase& c, std::vector<uint16_t>& l16, std::vector<float>& bias) {
  ref::TopkInput in;
  const TopkShape& s = c.shape;
  bias.resize(c.bias.size());
  std::memcpy(bias.data(), c.bias.data(), bias.size() * 4);
  if (s.bf16) {
    l16.assign(c.logits.begin(), c.logits.end());
    in.logits = l16.data() + s.logits_offset;
  } else {
    in.logits = reinterpret_cast<const float*>(c.logits.data()) + s.logits_offset;
  }
  in.bf16 = s.bf16;
  in.logits_stride = c.logits_stride();
  in.bias = bias.data();
  in.rows = s.T;
  in.experts = s.E;
  in.k = s.k;
  in.renormalize = s.renormalize;
  in.rsf = s.rsf;
  in.real_rows = c.real_rows();
  return in;
}
}  // namespace

TopkOutput topk_expected(const TopkCase& c) {
  TopkOutput o{c.weights_init, c.ids_init};
  std::vector<uint16_t> l16;
  std::vector<float> bias;
  const ref::TopkInput in = ref_input(c, l16, bias);
  ref::topk_bit_model(in, reinterpret_cast<float*>(o.weights.data()), c.weights_stride(),
                      reinterpret_cast<int32_t*>(o.ids.data()), c.ids_stride());
  return o;
}

// Float64 bounds.
// Choice: c32 = RN(s32 + bias) with s32 within 2.5 fp32 ulp of sigmoid (exhaustive
// test), so |c32 - c64| <= 2.5 ulp(s) + 0.5 ulp(c) < delta(e) = 3 ulp(s64) + ulp(c64).
// The kernel's choice is exact on c32, hence for chosen i and unchosen j:
// c64[i] >= c64[j] - delta(i) - delta(j); ranks likewise.  Where s64 < FLT_MIN the
// sigmoid's promise is absolute (2^-126), and delta grows by that.  (Float64 itself may pick a
// different expert near a tie; that is not a failure.)
// Weights: s32 (2.5 ulp), the fp32 sum of k non-negative terms in rank order
// ((k-1)/2 ulp + 2.5 ulp carried), the division and the product (0.5 ulp each):
// |w - w64| <= (6 + k/2) ulp of w64.  Where s64 < FLT_MIN, sigmoid_f32 keeps few or no
// bits (as eager PyTorch's), so there |w - w64| <= scale * 2^-125 instead.
static double topk_weight_bound_ulp(int k) { return 6.0 + 0.5 * k; }

Verdict check_topk(const TopkCase& c, const TopkOutput& got) {
  Verdict v;
  const TopkShape& s = c.shape;
  v.bound_ulp = topk_weight_bound_ulp(s.k);
  const TopkOutput want = topk_expected(c);
  v.elements = s.T * s.k * 2;
  if (got.weights.size() < want.weights.size() || got.ids.size() < want.ids.size()) {
    v.bit_mismatches = 1;
    v.note("output buffers came back short");
    return v;
  }
  auto where = [&](const char* name, std::size_t idx, int64_t stride) {
    std::ostringstream os;
    const int64_t t = static_cast<int64_t>(idx) / stride, r = static_cast<int64_t>(idx) % stride;
    if (t < s.T && r < s.k)
      os << name << "[t=" << t << ", r=" << r << "]";
    else
      os << name << " buffer[" << idx << "] (outside the view)";
    return os.str();
  };
  for (std::size_t i = 0; i < want.weights.size(); ++i)
    if (got.weights[i] != want.weights[i]) {
      ++v.bit_mismatches;
      std::ostringstream d;
      d.precision(9);
      d << where("weights", i, c.weights_stride()) << ": got " << hex32(got.weights[i]) << " ("
        << f32_from_bits(got.weights[i]) << "), bit model " << hex32(want.weights[i]) << " ("
        << f32_from_bits(want.weights[i]) << ")";
      v.note(d.str());
    }
  for (std::size_t i = 0; i < want.ids.size(); ++i)
    if (got.ids[i] != want.ids[i]) {
      ++v.bit_mismatches;
      v.note(where("ids", i, c.ids_stride()) + ": got " + std::to_string(static_cast<int32_t>(got.ids[i])) +
             ", bit model " + std::to_string(static_cast<int32_t>(want.ids[i])));
    }

  // float64: choice within tolerance, weights within the bound.
  const int64_t real = c.real_rows();
  if (real == 0) return v;
  std::vector<uint16_t> l16;
  std::vector<float> bias;
  const ref::TopkInput in = ref_input(c, l16, bias);
  std::vector<double> s64(static_cast<std::size_t>(s.T * s.E)), c64(s64.size());
  ref::topk_math_scores(in, s64.data(), c64.data());
  std::vector<char> chosen(s.E);
  for (int64_t t = 0; t < real; ++t) {
    const double* sr = &s64[t * s.E];
    const double* cr = &c64[t * s.E];
    auto cc = [&](int e) { return std::isnan(cr[e]) ? -INFINITY : cr[e]; };
    auto delta = [&](int e) {
      const double sv = std::isnan(sr[e]) ? 0 : sr[e];
      const double cv = std::isfinite(cr[e]) ? cr[e] : 0;
      // below FLT_MIN sigmoid_f32's promise is absolute (2^-126), see numeric_exhaustive.cpp
      return 3 * ulp32_at(sv) + ulp32_at(cv) + (sv < 0x1p-126 ? 0x1p-126 : 0.0);
    };
    std::fill(chosen.begin(), chosen.end(), 0);
    std::vector<int> ids(s.k);
    bool ids_ok = true;
    for (int r = 0; r < s.k; ++r) {
      const int32_t id = static_cast<int32_t>(got.ids[t * c.ids_stride() + r]);
      if (id < 0 || id >= s.E || chosen[id]) {
        ids_ok = false;
        break;
      }
      chosen[id] = 1;
      ids[r] = id;
    }
    if (!ids_ok) {
      ++v.bound_violations;
      v.note("row " + std::to_string(t) + ": ids are not k distinct experts in [0, E)");
      continue;
    }
    for (int r = 0; r < s.k; ++r) {
      const int i = ids[r];
      if (r + 1 < s.k && cc(i) < cc(ids[r + 1]) - delta(i) - delta(ids[r + 1])) {
        ++v.bound_violations;
        v.note("row " + std::to_string(t) + ": rank " + std::to_string(r) + " (expert " + std::to_string(i) +
               ") has a float64 choice score below rank " + std::to_string(r + 1) + "'s beyond tolerance");
      }
      for (int j = 0; j < s.E; ++j) {
        if (chosen[j]) continue;
        if (cc(i) < cc(j) - delta(i) - delta(j)) {
          ++v.bound_violations;
          std::ostringstream d;
          d.precision(17);
          d << "row " << t << ": chose expert " << i << " (c64 " << cc(i) << ") over expert " << j << " (c64 "
            << cc(j) << ") beyond tolerance";
          v.note(d.str());
          break;
        }
      }
    }
    // weights
    double sum64 = 0;
    for (int r = 0; r < s.k; ++r) sum64 += sr[ids[r]];
    const double rsf = s.rsf;
    const double scale64 = s.renormalize ? rsf / (sum64 < 1e-20 ? 1e-20 : sum64) : rsf;
    for (int r = 0; r < s.k; ++r) {
      const float w = f32_from_bits(got.weights[t * c.weights_stride() + r]);
      const double w64 = sr[ids[r]] * scale64;
      bool ok;
      double ulp = 0;
      if (std::isnan(w64) || std::isnan(w)) {
        ok = std::isnan(w64) && std::isnan(w);
      } else if (sr[ids[r]] < 0x1p-126 || std::fabs(sum64 - 1e-20) < 1e-26) {
        ok = std::fabs(w - w64) <= std::fabs(scale64) * 0x1p-125 + ulp32_at(w64);  // rsf may be negative
      } else {
        ulp = std::fabs(w - w64) / ulp32_at(w64);
        ok = ulp <= v.bound_ulp;
        v.worst_ulp = std::max(v.worst_ulp, ulp);
      }
      if (!ok) {
        ++v.bound_violations;
        std::ostringstream d;
        d.precision(17);
        d << "weights[t=" << t << ", r=" << r << "] (expert " << ids[r] << "): got " << w << ", float64 " << w64
          << " (" << ulp << " ulp)";
        v.note(d.str());
      }
    }
  }
  return v;
}

std::vector<TopkOutput> run_topk_replays(const TopkCase& capture, const std::vector<TopkCase>& data,
                                         const std::vector<int64_t>& real_rows, hy4::rt::Stream s,
                                         std::vector<TopkCase>* as_run) {
  TopkDeviceBuffers b(capture, true);
  TopkPlan plan(b.args);
  TopkCase current = capture;
  current.shape.has_num_rows = true;
  const KeepCaseOnFault keep([&] { return topk_to_file(current); }, true);
  b.upload(current, s);
  CapturedGraph graph(s, [&](hy4::rt::Stream cs) { plan.launch(cs); });
  std::mt19937_64 rng(capture.seed ^ 0x70b4);
  std::vector<TopkOutput> outs;
  for (std::size_t k = 0; k < data.size(); ++k) {
    const TopkCase& d = data[k];
    const int64_t r = real_rows[k];
    // new logits for the real rows; padded rows keep stale logits, some turned NaN
    for (int64_t t = 0; t < capture.shape.T; ++t)
      for (int e = 0; e < capture.shape.E; ++e) {
        const int64_t idx = capture.shape.logits_offset + t * capture.logits_stride() + e;
        if (t < r)
          current.logits[idx] = d.logits[idx % d.logits.size()];
        else if (rng() % 5 == 0)
          current.logits[idx] = capture.shape.bf16 ? 0x7FC0u : 0x7fc00000u;
      }
    current.bias = d.bias;
    current.shape.num_rows = r;
    for (auto& w : current.weights_init) w = 0x7fbad000u | static_cast<uint32_t>(rng() & 0xFFF);
    for (auto& i : current.ids_init) i = 0xdead0000u | static_cast<uint32_t>(rng() & 0xFFFF);
    b.upload(current, s);
    hy4::rt::begin_case_schedule(current.seed);  // as in run_topk_eager: the replayed case's own schedule
    graph.replay();
    outs.push_back(b.download(s));
    if (as_run) as_run->push_back(current);
  }
  return outs;
}

namespace {
// A plan-only limit case's views, each at its own far address (refusals.h).
void far_views(TopkArgs& a) {
  a.logits.data = far_address(1);
  a.weights.data = far_address(2);
  a.ids.data = far_address(3);
}
}  // namespace

std::vector<std::string> topk_bad_argument_failures(int* classes) {
  const int64_t T = 4;
  DeviceBuffer<float> logits(T * 300), bias(300), weights(T * 10);
  DeviceBuffer<int32_t> ids(T * 10), count(1);
  ScopedStream s;
  std::vector<float> wpoison(weights.size(), -7.0f);
  std::vector<int32_t> ipoison(ids.size(), -7);
  weights.upload(wpoison, s);
  ids.upload(ipoison, s);
  hy4::rt::synchronize(s);
  auto good = [&] {
    TopkArgs a;
    a.logits = MatrixView{logits.get(), DType::F32, T, 256, 300};
    a.bias = bias.get();
    a.k = 8;
    a.routed_scaling_factor = 2.827f;
    a.num_rows = count.get();
    a.weights = MatrixView{weights.get(), DType::F32, T, 8, 9};
    a.ids = MatrixView{ids.get(), DType::I32, T, 8, 10};
    return a;
  };
  static const RefusalClass<TopkArgs> bad[] = {
      {"'logits' is a null pointer", [](TopkArgs& a) { a.logits.data = nullptr; }},
      {"'bias' is a null pointer", [](TopkArgs& a) { a.bias = nullptr; }},
      {"'bias' is not aligned", [](TopkArgs& a) { a.bias = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.bias) + 2); }},
      {"'weights' is a null pointer", [](TopkArgs& a) { a.weights.data = nullptr; }},
      {"'logits' has -2 rows", [](TopkArgs& a) { a.logits.rows = -2; }},
      {"'logits' has 16777217 rows", [](TopkArgs& a) { a.logits.rows = a.weights.rows = a.ids.rows = TopkPlan::kMaxRows + 1; }},
      {"'logits' has 513 columns", [](TopkArgs& a) { a.logits.cols = 513; a.logits.row_stride = 600; }},
      {"'logits' has 0 columns", [](TopkArgs& a) { a.logits.cols = 0; }},
      {"'k' is 9; must be in [1, min(E = 8", [](TopkArgs& a) { a.logits.cols = 8; a.k = 9; a.weights.cols = a.ids.cols = 9; }},
      {"'k' is 33", [](TopkArgs& a) { a.k = 33; a.weights.cols = a.ids.cols = 33; a.weights.row_stride = a.ids.row_stride = 33; }},
      {"'k' is 0", [](TopkArgs& a) { a.k = 0; }},
      {"'weights' has 7 columns", [](TopkArgs& a) { a.weights.cols = 7; }},
      {"'ids' has 3 rows", [](TopkArgs& a) { a.ids.rows = 3; }},
      {"'logits' has row stride 255, smaller than its row of 256", [](TopkArgs& a) { a.logits.row_stride = 255; }},
      {"'ids' has row stride 7, smaller than its row of 8", [](TopkArgs& a) { a.ids.row_stride = 7; }},
      {"'logits' has dtype int32; only fp32 and bf16", [](TopkArgs& a) { a.logits.dtype = DType::I32; }},
      {"'weights' has dtype bf16; only fp32", [](TopkArgs& a) { a.weights.dtype = DType::BF16; }},
      {"'ids' has dtype fp32; only int32", [](TopkArgs& a) { a.ids.dtype = DType::F32; }},
      {"'weights' at", [](TopkArgs& a) { a.weights.data = static_cast<char*>(a.weights.data) + 2; }},
      {"'num_rows' is not aligned", [](TopkArgs& a) { a.num_rows = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(a.num_rows) + 1); }},
      {"'routed_scaling_factor' is not finite", [](TopkArgs& a) { a.routed_scaling_factor = INFINITY; }},
      {"'path' is 3", [](TopkArgs& a) { a.path = static_cast<TopkPath>(3); }},
      {"'ids' overlaps 'weights'", [](TopkArgs& a) { a.ids.data = a.weights.data; a.ids.row_stride = a.weights.row_stride; }},
  };
  std::vector<std::string> failures = refusal_failures<TopkPlan>(good(), bad);
  // Exactly at each limit, accepted (far_views: the views 2^40 bytes apart).
  static const LimitCase<TopkArgs> at_limit[] = {
      {"T = 0 with a null bias (an empty batch reads nothing)",
       [](TopkArgs& a) {
         a.logits.rows = a.weights.rows = a.ids.rows = 0;
         a.bias = nullptr;
       }},
      {"kMaxRows rows",
       [](TopkArgs& a) {
         a.logits.rows = a.weights.rows = a.ids.rows = TopkPlan::kMaxRows;
         far_views(a);
       }},
      {"kMaxExperts columns, k = kMaxK", [](TopkArgs& a) {
         a.logits.cols = TopkPlan::kMaxExperts;
         a.logits.row_stride = TopkPlan::kMaxExperts;
         a.k = TopkPlan::kMaxK;
         a.weights.cols = a.ids.cols = a.weights.row_stride = a.ids.row_stride = TopkPlan::kMaxK;
         far_views(a);
       }},
      {"row stride kMaxStride", [](TopkArgs& a) {
         a.logits.row_stride = a.weights.row_stride = a.ids.row_stride = TopkPlan::kMaxStride;
         far_views(a);
       }},
      {"T = 0 with null logits, weights and ids (an empty tensor's data pointer may be null)",
       [](TopkArgs& a) {
         a.logits.rows = a.weights.rows = a.ids.rows = 0;
         a.logits.data = a.weights.data = a.ids.data = nullptr;
       }},
      {"one row with row strides 1 and 0 (a size-1 dimension's stride is never used)",
       [](TopkArgs& a) {
         a.logits.rows = a.weights.rows = a.ids.rows = 1;
         a.logits.row_stride = 1;
         a.weights.row_stride = 0;
       }},
      {"ids starting where weights' last row ends (weights' row padding is not part of it)",
       [](TopkArgs& a) {
         far_views(a);
         a.ids.data = past_last_element(a.weights);
       }},
  };
  for (const std::string& f : limit_failures<TopkPlan>(good(), at_limit)) failures.push_back(f);
  std::vector<float> wafter;
  std::vector<int32_t> iafter;
  weights.download(wafter, s);
  ids.download(iafter, s);
  hy4::rt::synchronize(s);
  if (std::memcmp(wafter.data(), wpoison.data(), wpoison.size() * 4) != 0 || iafter != ipoison)
    failures.push_back("a refused plan wrote to weights or ids");
  if (classes) *classes = static_cast<int>(sizeof bad / sizeof bad[0]);
  return failures;
}

Replays<TopkCase, TopkOutput> topk_graph_scenario(uint64_t seed, int64_t T, bool bf16, int replays,
                                                  hy4::rt::Stream s) {
  TopkShape sh;
  sh.T = T;
  sh.bf16 = bf16;
  sh.values = TopkValues::Mixed;
  const TopkCase capture = make_topk_case(seed, sh);
  std::vector<TopkCase> data;
  std::vector<int64_t> real;
  for (int k = 0; k < replays; ++k) {
    data.push_back(make_topk_case(seed + 1 + k, sh));
    real.push_back(k == 0 ? -3 : (k * 9) % (T + 5));  // negative (clamped to 0), 0..T, past T
  }
  Replays<TopkCase, TopkOutput> r;
  r.outs = run_topk_replays(capture, data, real, s, &r.as_run);
  return r;
}

std::vector<ConformanceRow> conform_topk(const ConformanceOptions& o) {
  OpBattery<TopkCase, TopkOutput> b;
  b.op = "topk";
  b.bound_name = "float64 choice + weight bound";
  b.cases = [](const ConformanceOptions& opt) {
    std::vector<std::pair<TopkCase, std::string>> v;
    for (uint64_t seed : opt.seeds) {
      TopkShape hy;  // HY V4: E = 256, k = 8, fp32, rsf 2.827, renormalised; [:, :8] of [T, 9] / [T, 10]
      hy.T = 64;
      hy.values = TopkValues::Mixed;
      v.emplace_back(make_topk_case(seed, hy), "conformance.topk.hyv4." + std::to_string(seed));
      for (int k = 0; k < opt.cases_per_seed; ++k) {
        const uint64_t cs = seed * 1000003u + 77 + k;
        v.emplace_back(random_topk_case(cs, 24), "conformance.topk.random." + std::to_string(cs));
      }
    }
    return v;
  };
  b.run = run_topk_eager;
  b.check = check_topk;
  b.to_file = topk_to_file;
  b.bound_worst = [](const Verdict& v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f ulp (bound 6 + k/2)", v.worst_ulp);
    return std::string(buf);
  };
  b.replays = [](const ConformanceOptions& opt, hy4::rt::Stream s) {
    const uint64_t seed = opt.seeds.empty() ? 1 : opt.seeds[0];
    return std::vector<Replays<TopkCase, TopkOutput>>{topk_graph_scenario(seed, 48, false, 16, s),
                                                       topk_graph_scenario(seed, 48, true, 8, s)};
  };
  b.warp_case = [](uint64_t seed) { return random_topk_case(seed, 16); };
  b.bad_arguments = topk_bad_argument_failures;
  return run_battery(b, o);
}

}  // namespace hy4::harness
