#include "chain_harness.h"

#include <cstring>
#include <random>

#include "device_buffer.h"
#include "fault_case.h"
#include "platform/hy4_numeric.h"
#include "routing.h"
#include "topk.h"

namespace hy4::harness {

namespace {
constexpr int kE = 256, kK = 8, kBlock = 64;  // HY V4

TopkCase chain_topk_case(uint64_t seed, int64_t T, int64_t num_rows) {
  TopkShape sh;
  sh.T = T;
  sh.E = kE;
  sh.k = kK;
  sh.weights_pad = 1;  // [T, 9]
  sh.ids_pad = 2;      // [T, 10]
  sh.has_num_rows = true;
  sh.num_rows = num_rows;
  sh.values = TopkValues::Mixed;
  return make_topk_case(seed, sh);
}
}  // namespace

RoutingCase chain_routing_case(const TopkCase& t) {
  const TopkOutput o = topk_expected(t);
  RoutingShape rs;
  rs.T = t.shape.T;
  rs.E = t.shape.E;
  rs.k = t.shape.k;
  rs.block_size = kBlock;
  rs.ids_pad = t.shape.ids_pad;
  rs.weights_pad = t.shape.weights_pad;
  rs.has_num_rows = true;
  rs.num_rows = t.shape.num_rows;
  RoutingCase rc = make_routing_case(0, rs);
  rc.ids = o.ids;
  rc.weights = o.weights;
  rc.ids.resize(rs.T * rc.ids_stride(), 0xFFFFFFFFu);
  rc.weights.resize(rs.T * rc.weights_stride(), 0);
  return rc;
}

std::vector<ChainRun> run_topk_routing_chain(uint64_t seed, int64_t T, int replays, hy4::rt::Stream s) {
  const TopkCase cap = chain_topk_case(seed, T, T);
  DeviceBuffer<float> logits(cap.logits.size()), bias(kE), weights(cap.weights_init.size() + 16);
  DeviceBuffer<int32_t> ids(cap.ids_init.size() + 16), count(1);
  const RoutingCase rcap = chain_routing_case(cap);
  DeviceBuffer<uint32_t> sorted(rcap.max_padded() + kRoutingGuard), sw(rcap.max_padded() + kRoutingGuard),
      eob(rcap.num_blocks() + kRoutingGuard), counts(2 + kRoutingGuard),
      ws(RoutingPlan::workspace_elems(T, kE));
  TopkArgs ta;
  ta.logits = MatrixView{logits.get(), DType::F32, T, kE, cap.logits_stride()};
  ta.bias = bias.get();
  ta.k = kK;
  ta.renormalize = cap.shape.renormalize;
  ta.routed_scaling_factor = cap.shape.rsf;
  ta.num_rows = count.get();
  ta.weights = MatrixView{weights.get(), DType::F32, T, kK, cap.weights_stride()};
  ta.ids = MatrixView{ids.get(), DType::I32, T, kK, cap.ids_stride()};
  RoutingArgs ra;
  ra.ids = ta.ids;
  ra.weights = ta.weights;
  ra.experts = kE;
  ra.block_size = kBlock;
  ra.num_rows = count.get();
  ra.sorted_ids = reinterpret_cast<int32_t*>(sorted.get());
  ra.sorted_weights = reinterpret_cast<float*>(sw.get());
  ra.expert_of_block = reinterpret_cast<int32_t*>(eob.get());
  ra.counts = reinterpret_cast<int32_t*>(counts.get());
  ra.sorted_capacity = rcap.max_padded();
  ra.block_capacity = rcap.num_blocks();
  ra.workspace = reinterpret_cast<int32_t*>(ws.get());
  ra.workspace_capacity = static_cast<int64_t>(ws.size());
  const TopkPlan tp(ta);
  const RoutingPlan rp(ra);
  // A fault in the captured chain leaves the chain's case file (seed, T, replays: the
  // whole run), as each op's own harness does.
  const KeepCaseOnFault keep([&] { return chain_to_file(seed, T, replays); }, true);
  std::mt19937_64 rng(seed);
  auto upload = [&](const TopkCase& c) {
    logits.upload(std::vector<float>(reinterpret_cast<const float*>(c.logits.data()),
                                     reinterpret_cast<const float*>(c.logits.data()) + c.logits.size()), s);
    bias.upload(std::vector<float>(reinterpret_cast<const float*>(c.bias.data()),
                                   reinterpret_cast<const float*>(c.bias.data()) + c.bias.size()), s);
    const int32_t n = static_cast<int32_t>(c.shape.num_rows);
    hy4::rt::copy_to_device(count.get(), &n, 4, s);
    // poison the intermediate and the final outputs
    std::vector<float> pw(weights.size(), f32_from_bits(0x7fc0dead));
    std::vector<int32_t> pi(ids.size(), 0x5a5a5a5a);
    weights.upload(pw, s);
    ids.upload(pi, s);
    for (auto* b : {&sorted, &sw, &eob, &counts}) b->upload(std::vector<uint32_t>(b->size(), kRoutingPoison), s);
    hy4::rt::synchronize(s);
  };
  upload(cap);
  CapturedGraph graph(s, [&](hy4::rt::Stream cs) {
    tp.launch(cs);
    rp.launch(cs);
  });
  std::vector<ChainRun> runs;
  for (int k = 0; k < replays; ++k) {
    const int64_t n = k % 4 == 3 ? T + 4 : (k % 4 == 2 ? -3 : static_cast<int64_t>(rng() % (T + 1)));
    ChainRun r;
    r.topk = chain_topk_case(seed + 1 + k, T, n);
    upload(r.topk);
    hy4::rt::begin_case_schedule(r.topk.seed);  // each replay's own schedule on the CPU executor
    graph.replay();
    std::vector<float> wf;
    std::vector<int32_t> ii;
    weights.download(wf, s);
    ids.download(ii, s);
    hy4::rt::synchronize(s);
    r.topk_out.weights.resize(r.topk.weights_init.size());
    r.topk_out.ids.resize(r.topk.ids_init.size());
    if (!r.topk_out.weights.empty())  // T = 0: empty vectors, whose data() may be null
      std::memcpy(r.topk_out.weights.data(), wf.data(), r.topk_out.weights.size() * 4);
    if (!r.topk_out.ids.empty()) std::memcpy(r.topk_out.ids.data(), ii.data(), r.topk_out.ids.size() * 4);
    sorted.download(r.routing_out.sorted_ids, s);
    sw.download(r.routing_out.sorted_weights, s);
    eob.download(r.routing_out.expert_of_block, s);
    counts.download(r.routing_out.counts, s);
    hy4::rt::synchronize(s);
    runs.push_back(std::move(r));
  }
  return runs;
}

Verdict check_chain(const ChainRun& r, hy4::rt::Stream s) {
  // The intermediate: topk's bit model over buffers that started as the chain's poison.
  TopkCase t = r.topk;
  std::fill(t.weights_init.begin(), t.weights_init.end(), 0x7fc0deadu);
  std::fill(t.ids_init.begin(), t.ids_init.end(), 0x5a5a5a5au);
  Verdict v = check_topk(t, r.topk_out);
  const RoutingCase rc = chain_routing_case(t);
  const Verdict vr = check_routing(rc, r.routing_out);
  v.merge(vr);
  // == eager launches of the two ops on the same data
  const TopkOutput te = run_topk_eager(t, s);
  if (!(te == r.topk_out)) {
    ++v.bit_mismatches;
    v.note("chain: the replayed topk stage differs from an eager topk launch");
  }
  if (!(run_routing_eager(rc, s) == r.routing_out)) {
    ++v.bit_mismatches;
    v.note("chain: the replayed routing stage differs from an eager routing launch on topk's output");
  }
  return v;
}

std::vector<ConformanceRow> conform_chain(const ConformanceOptions& o) {
  ConformanceRow row{"chain", "topk -> routing replay == eager == bit models"};
  ScopedStream s;
  const uint64_t seed = o.seeds.empty() ? 1 : o.seeds[0];
  int64_t bad = 0;
  guarded_stage(row, "the chain replays", [&] {
    for (int64_t T : {1, 64, 300}) {
      for (const ChainRun& r : run_topk_routing_chain(seed + T, T, 8, s)) {
        ++row.cases;
        const Verdict v = check_chain(r, s);
        if (!v.ok()) {
          ++bad;
          if (row.detail.empty()) {
            TopkCase keep = r.topk;
            keep.origin = "conformance.chain (topk stage of a failing chain replay)";
            row.detail = v.summary().substr(0, 300) + "; topk case: " +
                         save_failed_case(topk_to_file(keep), "conformance.chain." + std::to_string(T));
          }
        }
      }
    }
  });
  row.worst = std::to_string(bad) + " replays differ" + (row.pass ? "" : "; threw");
  row.pass = row.pass && bad == 0;
  return {row};
}

CaseFile chain_to_file(uint64_t seed, int64_t T, int replays) {
  CaseFile f;
  f.op = "chain";
  f.ints = {{"seed", static_cast<int64_t>(seed)}, {"T", T}, {"replays", replays}};
  f.text["origin"] = "topk -> routing chain (replay data from the seed)";
  return f;
}

Verdict replay_chain_file(const CaseFile& f, hy4::rt::Stream s) {
  const uint64_t seed = static_cast<uint64_t>(f.get("seed"));
  const int64_t T = f.get_in("T", 0, 1 << 20);
  const int replays = static_cast<int>(f.get_or_in("replays", 4, 1, 64));
  Verdict all;
  int k = 0;
  for (const ChainRun& r : run_topk_routing_chain(seed, T, replays, s)) {
    Verdict v = check_chain(r, s);
    if (!v.ok()) v.note("chain replay " + std::to_string(k));
    all.merge(v);
    ++k;
  }
  return all;
}

}  // namespace hy4::harness
