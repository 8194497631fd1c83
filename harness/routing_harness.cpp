#include "routing_harness.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "device_buffer.h"
#include "fault_case.h"
#include "numerics.h"
#include "platform/hy4_numeric.h"
#include "refusals.h"
#include "routing.h"
#include "routing_reference.h"

namespace hy4::harness {

int64_t RoutingCase::real_rows() const {
  if (!shape.has_num_rows) return shape.T;
  return std::clamp<int64_t>(shape.num_rows, 0, shape.T);
}
int64_t RoutingCase::max_padded() const { return RoutingPlan::max_padded(shape.T, shape.k, shape.E, shape.block_size); }
int64_t RoutingCase::num_blocks() const { return RoutingPlan::num_blocks(shape.T, shape.k, shape.E, shape.block_size); }

RoutingCase make_routing_case(uint64_t seed, const RoutingShape& shape) {
  RoutingCase c;
  c.seed = seed;
  c.shape = shape;
  std::mt19937_64 rng(seed);
  const int64_t T = shape.T;
  const int E = shape.E, k = shape.k;
  if (k < 1 || k > E)  // k distinct experts per row below (case files are held to it by routing_from_file)
    throw std::invalid_argument("make_routing_case: k = " + std::to_string(k) + " must be in [1, E = " + std::to_string(E) + "]");
  c.ids.resize(T * c.ids_stride());
  c.weights.resize(T * c.weights_stride());
  for (auto& w : c.ids) w = static_cast<uint32_t>(rng() % 3 == 0 ? -1 : static_cast<int32_t>(rng() % (2 * E)));  // gaps: garbage
  std::normal_distribution<float> nd(0.3f, 0.2f);
  for (auto& w : c.weights) w = f32_bits(nd(rng));
  std::vector<int> perm(E);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t t = 0; t < T; ++t) {
    RoutingValues mode = shape.values;
    if (mode == RoutingValues::Mixed) mode = static_cast<RoutingValues>(rng() % 4);
    for (int i = 0; i < k; ++i) std::swap(perm[i], perm[i + rng() % (E - i)]);  // k distinct, random order
    for (int s = 0; s < k; ++s) {
      int32_t id = perm[s];
      if (mode == RoutingValues::Duplicates) id = static_cast<int32_t>(rng() % std::min(E, 3));
      if (mode == RoutingValues::Invalid && rng() % 3 == 0) {
        static const int32_t bad[] = {-1, -1, -2, -1000000, 0x7fffffff, static_cast<int32_t>(0x80000000u)};
        id = rng() % 2 ? bad[rng() % 6] : E + static_cast<int32_t>(rng() % 5);
      }
      if (mode == RoutingValues::Skewed) id = rng() % 8 ? 0 : static_cast<int32_t>(rng() % std::min(E, 2) + (E > 2 ? E - 2 : 0));
      c.ids[t * c.ids_stride() + s] = static_cast<uint32_t>(id);
      if (rng() % 50 == 0) c.weights[t * c.weights_stride() + s] = rng() % 2 ? 0x7fc00000u : 0x80000000u;  // NaN, -0
    }
  }
  if (shape.has_mask) {
    c.mask.resize(E);
    for (auto& m : c.mask) m = rng() % 2 ? 1u : 0u;
  }
  if (shape.hidden > 0) {
    c.moe_out.resize(T * c.moe_stride());
    for (auto& v : c.moe_out) v = static_cast<uint16_t>(0x7FC0 | (rng() & 0x3F));  // stale NaN
  }
  return c;
}

// The kernel's case splits (kernels/routing.hip, routing_plan.cpp) and where the
// generator and the properties cross each, on both sides, at warp 32 and 64 (cpu32 / cpu64):
//   path                one kernel (T*k <= 2048) | two kernels (T*k > 2048): T = 256 / 257 at
//                       k = 8, 2048 / 2049 at k = 1, 64 / 65 at k = 32 (EveryPathAndGridSplit)
//   decode path         T*k <= 32, no mask: one entry per lane (DecodePathBothSidesOfItsSplit)
//   bitmap path         32 < T*k <= 512 and E <= 256, or a mask at T*k <= 512: T*k 32 | 33,
//                       512 | 513, E 256 | 257; its block max(scan_threads(E), pow2 >= T*k)
//                       either side larger; words of 32 entries 1 .. 16; one expert warp |
//                       several (BitmapPathBothSidesOfItsSplits, BitmapOneExpertHoldsEveryEntry)
//   padding blocks      fill_blocks = ceil(max_padded / 1024) blocks, 1 .. 128: max_padded at
//                       1024 +- 1, 2048 + 1 and past the cap (E = 512, block 1024); the sort
//                       grid with two kernels max(chunks, fill_blocks), both ways
//   chunks              two kernels: 1 chunk (T <= 64) | several | the cap (T > 64 * 64:
//                       chunks grow, TokensPastTheChunkCap)
//   block threads       the power of two >= E, 64 .. 512 (E = 63..65, 127..129, 255..257, 511,
//                       512: EveryOffsetsBlockSizeBothSides); at least 256 with two kernels
//   warp runs           entries per warp below, at and above a multiple of the warp (T, k
//                       small), warps with no entries; groups of one expert | all distinct
//   id bits             match_any bits = bits of E (ids -1 .. E - 1 as 0 .. E; CPU / HIP: one
//                       ballot each): E a power of two or one past it
//   block_size          1, 16 .. 256, 1024: padding none | partial | a whole block
//   mask                none | mask (local renumbering) ; row count none | < 0 | within | past T
//   ids                 valid | -1 | negative | >= E ; duplicates within a row
//   zero-fill           no moe_out | moe_out rows (grid-stride over either path's blocks)
RoutingCase random_routing_case(uint64_t seed, int64_t max_T) {
  std::mt19937_64 rng(seed ^ 0x2047ULL);
  RoutingShape s;
  s.T = static_cast<int64_t>(rng() % (max_T + 1));
  static const int experts[] = {1, 2, 7, 8, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512};
  s.E = rng() % 2 ? 256 : experts[rng() % 18];
  static const int ks[] = {1, 2, 7, 8, 9, 31, 32};
  s.k = std::min(s.E, rng() % 2 ? 8 : ks[rng() % 7]);
  static const int bss[] = {1, 2, 16, 32, 64, 128, 256, 1024};
  s.block_size = bss[rng() % 8];
  s.ids_pad = static_cast<int64_t>(rng() % 3);
  s.weights_pad = static_cast<int64_t>(rng() % 3);
  s.has_mask = rng() % 3 == 0;
  s.has_num_rows = rng() % 2 == 0;
  s.num_rows = static_cast<int64_t>(rng() % (s.T + 3)) - 1;
  s.hidden = rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 40) : 0;
  s.moe_pad = static_cast<int64_t>(rng() % 3);
  s.values = static_cast<RoutingValues>(rng() % 5);
  return make_routing_case(seed, s);
}

CaseFile routing_to_file(const RoutingCase& c) {
  CaseFile f;
  f.op = "routing";
  const auto& s = c.shape;
  f.ints = {{"seed", static_cast<int64_t>(c.seed)}, {"T", s.T}, {"E", s.E}, {"k", s.k}, {"block_size", s.block_size},
            {"ids_pad", s.ids_pad}, {"weights_pad", s.weights_pad}, {"has_mask", s.has_mask ? 1 : 0},
            {"has_num_rows", s.has_num_rows ? 1 : 0}, {"num_rows", s.num_rows}, {"hidden", s.hidden},
            {"moe_pad", s.moe_pad}, {"values", static_cast<int64_t>(s.values)}};
  if (!c.origin.empty()) f.text["origin"] = c.origin;
  f.put32("ids", c.ids);
  f.put32("weights", c.weights);
  if (s.has_mask) f.put32("mask", c.mask);
  if (s.hidden > 0) f.put16("moe_out", c.moe_out);
  return f;
}

RoutingCase routing_from_file(const CaseFile& f) {
  if (f.op != "routing") throw CaseFileError("case file holds op '" + f.op + "', not 'routing'");
  RoutingCase c;
  auto& s = c.shape;
  // Every size is range-checked before anything is computed from it (no overflow below).
  c.seed = static_cast<uint64_t>(f.get_or("seed", 0));
  s.T = f.get_in("T", 0, 1 << 20);
  s.E = static_cast<int>(f.get_in("E", 1, RoutingPlan::kMaxExperts));
  s.k = static_cast<int>(f.get_in("k", 1, std::min(s.E, RoutingPlan::kMaxK)));
  s.block_size = static_cast<int>(f.get_in("block_size", 1, RoutingPlan::kMaxBlockSize));
  if ((s.block_size & (s.block_size - 1)) != 0) throw CaseFileError("routing case: int block_size is not a power of two");
  s.ids_pad = f.get_or_in("ids_pad", 0, 0, 1 << 16);
  s.weights_pad = f.get_or_in("weights_pad", 0, 0, 1 << 16);
  s.has_mask = f.get_or_in("has_mask", 0, 0, 1) != 0;
  s.has_num_rows = f.get_or_in("has_num_rows", 0, 0, 1) != 0;
  s.num_rows = f.get_or_in("num_rows", 0, -(int64_t{1} << 31), (int64_t{1} << 31) - 1);
  s.hidden = f.get_or_in("hidden", 0, 0, 1 << 16);
  s.moe_pad = f.get_or_in("moe_pad", 0, 0, 1 << 16);
  s.values = static_cast<RoutingValues>(f.get_or_in("values", 0, 0, 4));
  if (f.generated()) {
    f.check_generated_size(s.T * c.ids_stride() + s.T * c.weights_stride() + s.E + s.T * c.moe_stride());
    RoutingCase g = make_routing_case(c.seed, s);
    g.origin = f.text_or("origin", "generated from seed and shape");
    return g;
  }
  c.ids = f.tensor32("ids");
  c.weights = f.tensor32("weights");
  if (s.has_mask) c.mask = f.tensor32("mask");
  if (s.hidden > 0) c.moe_out = f.tensor16("moe_out");
  c.origin = f.text_or("origin", "");
  if (static_cast<int64_t>(c.ids.size()) < s.T * c.ids_stride()) throw CaseFileError("routing case: tensor ids is shorter than T * (k + ids_pad)");
  if (static_cast<int64_t>(c.weights.size()) < s.T * c.weights_stride()) throw CaseFileError("routing case: tensor weights is shorter than T * (k + weights_pad)");
  if (s.has_mask && static_cast<int64_t>(c.mask.size()) < s.E) throw CaseFileError("routing case: tensor mask has fewer than E elements");
  if (s.hidden > 0 && static_cast<int64_t>(c.moe_out.size()) < s.T * c.moe_stride()) throw CaseFileError("routing case: tensor moe_out is shorter than T * (hidden + moe_pad)");
  c.ids.resize(s.T * c.ids_stride());
  c.weights.resize(s.T * c.weights_stride());
  if (s.has_mask) c.mask.resize(s.E);
  if (s.hidden > 0) c.moe_out.resize(s.T * c.moe_stride());
  return c;
}

namespace {

struct RoutingDeviceBuffers {
  DeviceBuffer<uint32_t> ids, weights, mask, num_rows, sorted_ids, sorted_weights, eob, counts, workspace;
  DeviceBuffer<uint16_t> moe;
  RoutingArgs args;
  explicit RoutingDeviceBuffers(const RoutingCase& c)
      : ids(std::max<std::size_t>(c.ids.size(), 1)), weights(std::max<std::size_t>(c.weights.size(), 1)),
        mask(std::max<std::size_t>(c.mask.size(), 1)), num_rows(1), sorted_ids(c.max_padded() + kRoutingGuard),
        sorted_weights(c.max_padded() + kRoutingGuard), eob(c.num_blocks() + kRoutingGuard), counts(2 + kRoutingGuard),
        workspace(RoutingPlan::workspace_elems(c.shape.T, c.shape.E)), moe(c.moe_out.size()) {
    const auto& s = c.shape;
    args.ids = MatrixView{ids.get(), DType::I32, s.T, s.k, c.ids_stride()};
    args.weights = MatrixView{weights.get(), DType::F32, s.T, s.k, c.weights_stride()};
    args.experts = s.E;
    args.block_size = s.block_size;
    args.expert_mask = s.has_mask ? reinterpret_cast<const int32_t*>(mask.get()) : nullptr;
    args.num_rows = s.has_num_rows ? reinterpret_cast<const int32_t*>(num_rows.get()) : nullptr;
    args.sorted_ids = reinterpret_cast<int32_t*>(sorted_ids.get());
    args.sorted_weights = reinterpret_cast<float*>(sorted_weights.get());
    args.expert_of_block = reinterpret_cast<int32_t*>(eob.get());
    args.counts = reinterpret_cast<int32_t*>(counts.get());
    args.sorted_capacity = c.max_padded();
    args.block_capacity = c.num_blocks();
    args.workspace = reinterpret_cast<int32_t*>(workspace.get());
    args.workspace_capacity = static_cast<int64_t>(workspace.size());
    if (s.hidden > 0) args.moe_out = MatrixView{moe.get(), DType::BF16, s.T, s.hidden, c.moe_stride()};
  }
  // Inputs and the poisoned outputs (every output buffer, guards included).
  void upload(const RoutingCase& c, hy4::rt::Stream s) {
    ids.upload(c.ids, s);
    weights.upload(c.weights, s);
    if (c.shape.has_mask) mask.upload(c.mask, s);
    const std::vector<uint32_t> n(1, static_cast<uint32_t>(static_cast<int32_t>(c.shape.num_rows)));
    num_rows.upload(n, s);
    std::vector<uint32_t> poison(sorted_ids.size(), kRoutingPoison);
    sorted_ids.upload(poison, s);
    sorted_weights.upload(poison, s);
    std::vector<uint32_t> pb(eob.size(), kRoutingPoison), pc(counts.size(), kRoutingPoison);
    eob.upload(pb, s);
    counts.upload(pc, s);
    if (c.shape.hidden > 0) moe.upload(c.moe_out, s);
    hy4::rt::synchronize(s);
  }
  RoutingOutput download(hy4::rt::Stream s) {
    RoutingOutput r;
    sorted_ids.download(r.sorted_ids, s);
    sorted_weights.download(r.sorted_weights, s);
    eob.download(r.expert_of_block, s);
    counts.download(r.counts, s);
    if (moe.size()) moe.download(r.moe_out, s);
    hy4::rt::synchronize(s);
    return r;
  }
};

ref::RoutingInput ref_input(const RoutingCase& c, std::vector<float>& w) {
  w.resize(c.weights.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = f32_from_bits(c.weights[i]);
  ref::RoutingInput in;
  in.ids = reinterpret_cast<const int32_t*>(c.ids.data());
  in.ids_stride = c.ids_stride();
  in.weights = w.data();
  in.weights_stride = c.weights_stride();
  in.T = c.shape.T;
  in.k = c.shape.k;
  in.E = c.shape.E;
  in.block_size = c.shape.block_size;
  in.mask = c.shape.has_mask ? reinterpret_cast<const int32_t*>(c.mask.data()) : nullptr;
  in.real_rows = c.real_rows();
  return in;
}

RoutingOutput to_output(const RoutingCase& c, const ref::RoutingResult& r) {
  RoutingOutput o;
  o.sorted_ids.assign(r.sorted_ids.begin(), r.sorted_ids.end());
  o.sorted_weights.resize(r.sorted_weights.size());
  for (std::size_t i = 0; i < r.sorted_weights.size(); ++i) o.sorted_weights[i] = f32_bits(r.sorted_weights[i]);
  o.expert_of_block.assign(r.expert_of_block.begin(), r.expert_of_block.end());
  o.counts = {static_cast<uint32_t>(r.counts[0]), static_cast<uint32_t>(r.counts[1])};
  for (auto* v : {&o.sorted_ids, &o.sorted_weights, &o.expert_of_block, &o.counts}) v->resize(v->size() + kRoutingGuard, kRoutingPoison);
  o.moe_out = c.moe_out;
  for (int64_t t = 0; t < c.shape.T; ++t)
    for (int64_t j = 0; j < c.shape.hidden; ++j) o.moe_out[t * c.moe_stride() + j] = 0;
  return o;
}

}  // namespace

RoutingOutput run_routing_eager(const RoutingCase& c, hy4::rt::Stream s) {
  RoutingDeviceBuffers b(c);
  RoutingPlan plan(b.args);
  const KeepCaseOnFault keep([&] { return routing_to_file(c); }, false);
  b.upload(c, s);
  hy4::rt::begin_case_schedule(c.seed);  // the CPU executor: the same schedule whenever this case runs
  plan.launch(s);
  return b.download(s);
}

RoutingOutput routing_expected(const RoutingCase& c) {
  std::vector<float> w;
  return to_output(c, ref::routing_bit_model(ref_input(c, w)));
}

Verdict check_routing(const RoutingCase& c, const RoutingOutput& got) {
  Verdict v;
  const RoutingOutput want = routing_expected(c);
  v.elements = static_cast<int64_t>(want.sorted_ids.size() + want.sorted_weights.size() + want.expert_of_block.size() + 2);
  auto cmp = [&](const char* name, const std::vector<uint32_t>& g, const std::vector<uint32_t>& w, int64_t view) {
    if (g.size() != w.size()) {
      ++v.bit_mismatches;
      v.note(std::string(name) + " came back with " + std::to_string(g.size()) + " elements, expected " + std::to_string(w.size()));
      return;
    }
    for (std::size_t i = 0; i < w.size(); ++i)
      if (g[i] != w[i]) {
        ++v.bit_mismatches;
        std::ostringstream os;
        os << name << "[" << i << "]" << (static_cast<int64_t>(i) >= view ? " (past the output's end)" : "") << ": got "
           << hex32(g[i]) << ", bit model " << hex32(w[i]);
        v.note(os.str());
      }
  };
  cmp("sorted_ids", got.sorted_ids, want.sorted_ids, c.max_padded());
  cmp("sorted_weights", got.sorted_weights, want.sorted_weights, c.max_padded());
  cmp("expert_of_block", got.expert_of_block, want.expert_of_block, c.num_blocks());
  cmp("counts", got.counts, want.counts, 2);
  if (got.moe_out != want.moe_out) {
    ++v.bit_mismatches;
    v.note("moe_out differs (zero-fill of the [T, hidden] view, gaps untouched)");
  }
  // The independent construction agrees with the bit model.
  std::vector<float> w;
  const RoutingOutput by_sort = to_output(c, ref::routing_by_sort(ref_input(c, w)));
  if (!(by_sort == want)) {
    ++v.bound_violations;
    v.note("the sort-based reference differs from the bit model");
  }
  // Invariants of routing.h on the kernel's own output.
  if (got.counts.size() < 2 || got.sorted_ids.size() < static_cast<std::size_t>(c.max_padded())) return v;
  auto bad = [&](const std::string& what) {
    ++v.bound_violations;
    v.note("invariant: " + what);
  };
  const auto& s = c.shape;
  const int64_t mp = c.max_padded(), used = static_cast<int32_t>(got.counts[0]);
  const uint32_t pad_id = (static_cast<uint32_t>(s.k) << 24) | static_cast<uint32_t>(s.T);
  if (static_cast<int32_t>(got.counts[1]) != c.real_rows()) bad("counts[1] is not the real token count");
  if (used < 0 || used > mp || used % s.block_size != 0) {
    bad("counts[0] = " + std::to_string(used) + " is not a multiple of block_size within max_padded");
    return v;
  }
  std::vector<int32_t> local(s.E, -1);
  for (int e = 0, n = 0; e < s.E; ++e)
    if (!s.has_mask || c.mask[e] != 0) local[e] = n++;
  std::vector<int> seen(s.T * s.k, 0);
  int64_t valid = 0;
  for (int64_t t = 0; t < c.real_rows(); ++t)
    for (int sl = 0; sl < s.k; ++sl) {
      const int32_t id = static_cast<int32_t>(c.ids[t * c.ids_stride() + sl]);
      if (id >= 0 && id < s.E && local[id] >= 0) ++valid;
    }
  int64_t entries = 0, prev = -1;
  for (int64_t b = 0; b < used / s.block_size; ++b) {
    const int32_t le = static_cast<int32_t>(got.expert_of_block[b]);
    if (le < 0) { bad("expert_of_block[" + std::to_string(b) + "] is -1 inside the used slots"); break; }
    if (b > 0 && le < static_cast<int32_t>(got.expert_of_block[b - 1])) { bad("experts out of order at block " + std::to_string(b)); break; }
    if (b > 0 && le != static_cast<int32_t>(got.expert_of_block[b - 1])) prev = -1;  // a new expert's segment
    for (int64_t j = b * s.block_size; j < (b + 1) * s.block_size; ++j) {
      const uint32_t sid = got.sorted_ids[j];
      if (sid == pad_id) continue;
      const int64_t t = sid & 0xFFFFFF, sl = sid >> 24;
      if (t >= c.real_rows() || sl >= s.k) { bad("slot " + std::to_string(j) + " holds an entry past the real rows"); break; }
      const int32_t id = static_cast<int32_t>(c.ids[t * c.ids_stride() + sl]);
      if (id < 0 || id >= s.E || local[id] != le) { bad("slot " + std::to_string(j) + " holds an entry of another expert"); break; }
      const int64_t key = t * s.k + sl;
      if (prev >= 0 && key <= prev) {
        bad("entries of expert " + std::to_string(le) + " not in ascending (token, slot) order at slot " + std::to_string(j));
        break;
      }
      prev = key;
      if (seen[key]++) bad("(t=" + std::to_string(t) + ", s=" + std::to_string(sl) + ") appears twice");
      if (got.sorted_weights[j] != c.weights[t * c.weights_stride() + sl]) bad("slot " + std::to_string(j) + " carries another weight");
      ++entries;
    }
  }
  if (entries != valid) bad(std::to_string(valid) + " valid (token, slot) pairs but " + std::to_string(entries) + " placed");
  for (int64_t j = used; j < mp; ++j)
    if (got.sorted_ids[j] != pad_id || got.sorted_weights[j] != 0) { bad("tail slot " + std::to_string(j) + " is not the sentinel"); break; }
  for (int64_t b = used / s.block_size; b < c.num_blocks(); ++b)
    if (got.expert_of_block[b] != 0xFFFFFFFFu) { bad("expert_of_block[" + std::to_string(b) + "] past the used blocks is not -1"); break; }
  return v;
}

std::vector<RoutingOutput> run_routing_replays(const RoutingCase& capture, const std::vector<RoutingCase>& data,
                                               hy4::rt::Stream s, std::vector<RoutingCase>* as_run) {
  RoutingDeviceBuffers b(capture);
  RoutingPlan plan(b.args);
  const KeepCaseOnFault keep([&] { return routing_to_file(capture); }, true);
  b.upload(capture, s);
  CapturedGraph graph(s, [&](hy4::rt::Stream cs) { plan.launch(cs); });
  std::vector<RoutingOutput> outs;
  for (const RoutingCase& d : data) {
    if (d.ids.size() != capture.ids.size() || d.weights.size() != capture.weights.size() ||
        d.mask.size() != capture.mask.size() || d.moe_out.size() != capture.moe_out.size())
      throw std::invalid_argument("run_routing_replays: a data case has another shape than the capture");
    b.upload(d, s);  // new inputs and row count in the same buffers, outputs poisoned
    hy4::rt::begin_case_schedule(d.seed);  // as in run_routing_eager: the replayed case's own schedule
    graph.replay();
    outs.push_back(b.download(s));
    if (as_run) as_run->push_back(d);
  }
  return outs;
}

Replays<RoutingCase, RoutingOutput> routing_graph_scenario(uint64_t seed, int64_t T, int replays, hy4::rt::Stream s) {
  RoutingShape shape;
  shape.T = T;
  shape.has_num_rows = true;
  shape.num_rows = T;
  shape.hidden = 24;
  shape.values = RoutingValues::Mixed;
  const RoutingCase capture = make_routing_case(seed, shape);
  std::vector<RoutingCase> data;
  for (int k = 0; k < replays; ++k) {
    RoutingShape sh = shape;
    sh.num_rows = (k % 4 == 3) ? T + 5 : (k % 4 == 2 ? -1 : (k * 7) % (T + 1));  // past T, below 0, within
    data.push_back(make_routing_case(seed + 1 + k, sh));
  }
  Replays<RoutingCase, RoutingOutput> r;
  r.outs = run_routing_replays(capture, data, s, &r.as_run);
  return r;
}

namespace {
// A plan-only limit case's views and outputs, each at its own far address (refusals.h),
// with the capacities the plan asks for at these arguments.
void far_outputs(RoutingArgs& a) {
  const int64_t T = a.ids.rows;
  const int k = static_cast<int>(a.ids.cols);
  a.ids.data = far_address(1);
  a.weights.data = far_address(2);
  a.sorted_ids = static_cast<int32_t*>(far_address(3));
  a.sorted_weights = static_cast<float*>(far_address(4));
  a.expert_of_block = static_cast<int32_t*>(far_address(5));
  a.counts = static_cast<int32_t*>(far_address(6));
  a.workspace = static_cast<int32_t*>(far_address(7));
  a.sorted_capacity = RoutingPlan::max_padded(T, k, a.experts, a.block_size);
  a.block_capacity = RoutingPlan::num_blocks(T, k, a.experts, a.block_size);
  a.workspace_capacity = RoutingPlan::workspace_elems(T, a.experts);
}
}  // namespace

std::vector<std::string> routing_bad_argument_failures(int* classes) {
  DeviceBuffer<int32_t> ids(4 * 9), sorted(4 * 8 + 16 * 16), sw(4 * 8 + 16 * 16), eob(64), counts(2), ws(64), moe(64);
  ScopedStream s;
  std::vector<int32_t> poison(sorted.size(), 0x5a5a5a5a);
  sorted.upload(poison, s);
  static int32_t *p_ids, *p_sorted, *p_eob, *p_counts, *p_ws, *p_moe;
  static float* p_sw;
  p_ids = ids.get();
  p_sorted = sorted.get();
  p_sw = reinterpret_cast<float*>(sw.get());
  p_eob = eob.get();
  p_counts = counts.get();
  p_ws = ws.get();
  p_moe = moe.get();
  auto good = [&] {
    RoutingArgs a;  // T = 4, k = 8 of rows of 9, E = 16, block 16: max_padded 4*8 + 256 - 8 = 280
    a.ids = MatrixView{p_ids, DType::I32, 4, 8, 9};
    a.weights = MatrixView{p_ids, DType::F32, 4, 8, 9};
    a.experts = 16;
    a.block_size = 16;
    a.sorted_ids = p_sorted;
    a.sorted_weights = p_sw;
    a.expert_of_block = p_eob;
    a.counts = p_counts;
    a.sorted_capacity = 280;
    a.block_capacity = 18;
    a.workspace = p_ws;
    a.workspace_capacity = 64;
    return a;
  };
  static const RefusalClass<RoutingArgs> bad[] = {
      {"'ids' is a null pointer", [](RoutingArgs& a) { a.ids.data = nullptr; }},
      {"'sorted_ids' is a null pointer", [](RoutingArgs& a) { a.sorted_ids = nullptr; }},
      {"'counts' is a null pointer", [](RoutingArgs& a) { a.counts = nullptr; }},
      {"'workspace' is a null pointer", [](RoutingArgs& a) { a.workspace = nullptr; }},
      {"'ids' has -1 rows", [](RoutingArgs& a) { a.ids.rows = -1; }},
      {"'ids' has 16777216 rows", [](RoutingArgs& a) { a.ids.rows = a.weights.rows = RoutingPlan::kMaxTokens + 1; }},
      {"'weights' has 3 rows", [](RoutingArgs& a) { a.weights.rows = 3; }},
      {"'ids' has 33 columns", [](RoutingArgs& a) { a.ids.cols = a.weights.cols = 33; }},
      {"'weights' has 7 columns", [](RoutingArgs& a) { a.weights.cols = 7; }},
      {"'ids' has row stride 7", [](RoutingArgs& a) { a.ids.row_stride = 7; }},
      {"'ids' has dtype fp32", [](RoutingArgs& a) { a.ids.dtype = DType::F32; }},
      {"'experts' is 0", [](RoutingArgs& a) { a.experts = 0; }},
      {"'experts' is 513", [](RoutingArgs& a) { a.experts = 513; }},
      {"more than experts = 4", [](RoutingArgs& a) { a.experts = 4; }},
      {"'block_size' is 48", [](RoutingArgs& a) { a.block_size = 48; }},
      {"'block_size' is 0", [](RoutingArgs& a) { a.block_size = 0; }},
      {"'block_size' is 2048", [](RoutingArgs& a) { a.block_size = 2048; }},
      {"'num_rows' is not aligned", [](RoutingArgs& a) { a.num_rows = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(a.counts) + 2); }},
      {"'sorted_capacity' is 279", [](RoutingArgs& a) { a.sorted_capacity = 279; }},
      {"'block_capacity' is 17", [](RoutingArgs& a) { a.block_capacity = 17; }},
      {"'workspace_capacity' is 15", [](RoutingArgs& a) { a.workspace_capacity = 15; }},
      {"'ids' at", [](RoutingArgs& a) { a.ids.data = reinterpret_cast<char*>(a.ids.data) + 2; }},
      {"'sorted_weights' is not aligned", [](RoutingArgs& a) { a.sorted_weights = reinterpret_cast<float*>(reinterpret_cast<char*>(a.sorted_weights) + 1); }},
      {"'expert_mask' is not aligned", [](RoutingArgs& a) { a.expert_mask = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(a.counts) + 1); }},
      {"'sorted_weights' overlaps 'expert_of_block'", [](RoutingArgs& a) { a.expert_of_block = reinterpret_cast<int32_t*>(a.sorted_weights) + 100; }},
      // An output starting on another's last element (the plan's sizes: max_padded 280,
      // 18 blocks, 2 counts, a workspace of 16), so each output's extent is checked to its end.
      {"'sorted_ids' overlaps 'sorted_weights'", [](RoutingArgs& a) { a.sorted_weights = reinterpret_cast<float*>(a.sorted_ids + 279); }},
      {"'expert_of_block' overlaps 'counts'", [](RoutingArgs& a) { a.counts = a.expert_of_block + 17; }},
      {"'counts' overlaps 'workspace'", [](RoutingArgs& a) { a.workspace = a.counts + 1; }},
      {"'counts' overlaps 'workspace'", [](RoutingArgs& a) { a.counts = a.workspace + 15; }},
      {"'moe_out' has dtype int32", [](RoutingArgs& a) { a.moe_out = MatrixView{p_moe, DType::I32, 4, 8, 8}; }},
      {"'moe_out' has 3 rows", [](RoutingArgs& a) { a.moe_out = MatrixView{p_moe, DType::BF16, 3, 8, 8}; }},
  };
  std::vector<std::string> failures = refusal_failures<RoutingPlan>(good(), bad);
  // Exactly at each limit, accepted (far_outputs: sized by the plan's own formulas).
  static const LimitCase<RoutingArgs> at_limit[] = {
      {"kMaxTokens tokens", [](RoutingArgs& a) { a.ids.rows = a.weights.rows = RoutingPlan::kMaxTokens; far_outputs(a); }},
      {"kMaxExperts experts, k = kMaxK, block kMaxBlockSize",
       [](RoutingArgs& a) {
         a.experts = RoutingPlan::kMaxExperts;
         a.ids.cols = a.weights.cols = a.ids.row_stride = a.weights.row_stride = RoutingPlan::kMaxK;
         a.block_size = RoutingPlan::kMaxBlockSize;
         far_outputs(a);
       }},
      {"row stride kMaxStride",
       [](RoutingArgs& a) {
         a.ids.row_stride = a.weights.row_stride = RoutingPlan::kMaxStride;
         far_outputs(a);
       }},
      {"T = 0 with null ids and weights (an empty tensor's data pointer may be null)",
       [](RoutingArgs& a) {
         a.ids.rows = a.weights.rows = 0;
         a.ids.data = a.weights.data = nullptr;
       }},
      {"the five outputs back to back, each starting where the one before it ends",
       [](RoutingArgs& a) {
         far_outputs(a);
         int32_t* p = a.sorted_ids;
         a.sorted_weights = reinterpret_cast<float*>(p += a.sorted_capacity);
         a.expert_of_block = p += a.sorted_capacity;
         a.counts = p += a.block_capacity;
         a.workspace = p + 2;
       }},
      {"the five outputs back to back in the other order",
       [](RoutingArgs& a) {
         far_outputs(a);
         int32_t* p = a.workspace;
         a.counts = p += a.workspace_capacity;
         a.expert_of_block = p += 2;
         a.sorted_weights = reinterpret_cast<float*>(p += a.block_capacity);
         a.sorted_ids = p + a.sorted_capacity;
       }},
      {"one token with row strides 1 and 0 (a size-1 dimension's stride is never used)",
       [](RoutingArgs& a) {
         a.ids.rows = a.weights.rows = 1;
         a.ids.row_stride = 1;
         a.weights.row_stride = 0;
       }},
  };
  for (const std::string& f : limit_failures<RoutingPlan>(good(), at_limit)) failures.push_back(f);
  std::vector<int32_t> after;
  sorted.download(after, s);
  hy4::rt::synchronize(s);
  if (after != poison) failures.push_back("a refused plan wrote to sorted_ids");
  if (classes) *classes = static_cast<int>(sizeof bad / sizeof bad[0]);
  return failures;
}

std::vector<ConformanceRow> conform_routing(const ConformanceOptions& o) {
  OpBattery<RoutingCase, RoutingOutput> b;
  b.op = "routing";
  b.bound_name = "sort reference + layout invariants";
  b.cases = [](const ConformanceOptions& opt) {
    std::vector<std::pair<RoutingCase, std::string>> v;
    for (uint64_t seed : opt.seeds) {
      RoutingShape prod;  // HY V4: k = 8 of [T, 9], E = 256, block 64, decode batch
      prod.T = 64;
      prod.has_num_rows = true;
      prod.num_rows = 60;
      v.emplace_back(make_routing_case(seed, prod), "conformance.routing.hyv4." + std::to_string(seed));
      for (int k = 0; k < opt.cases_per_seed; ++k) {
        const uint64_t cs = seed * 1000003u + k;
        v.emplace_back(random_routing_case(cs, 600), "conformance.routing.random." + std::to_string(cs));
      }
    }
    return v;
  };
  b.run = run_routing_eager;
  b.check = check_routing;
  b.to_file = routing_to_file;
  b.bound_worst = [](const Verdict& v) { return std::to_string(v.bound_violations) + " violations"; };
  b.replays = [](const ConformanceOptions& opt, hy4::rt::Stream s) {
    const uint64_t seed = opt.seeds.empty() ? 1 : opt.seeds[0];
    return std::vector<Replays<RoutingCase, RoutingOutput>>{routing_graph_scenario(seed, 300, 8, s)};
  };
  b.warp_case = [](uint64_t seed) { return random_routing_case(seed, 300); };
  b.bad_arguments = routing_bad_argument_failures;
  return run_battery(b, o);
}

}  // namespace hy4::harness
