// hy4-bench: the benchmark binary.  Performance claims come from here, never from a
// timed test.  For each op and shape: capture K launches into one graph, replay it
// R times, time each replay with device events; report the median (and p10/p90) time
// per launch against the op's memory floor (bytes that must move / peak bandwidth).
//
//   hy4-bench [--replays R] [--launches K] [--peak-gbs G]
//
// Default peak: 4800 GB/s, the H200's HBM3e datasheet figure.  On the CPU backend the
// numbers only describe the executor, not a GPU.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "gate.h"
#include "routing.h"
#include "sink.h"
#include "topk.h"
#include "platform/runtime.h"

using namespace hy4;
using namespace hy4::harness;

namespace {

struct Stats {
  double median_us, p10_us, p90_us;
};

template <class Enqueue>
Stats time_graph(Enqueue&& enqueue, int launches, int replays, hy4::rt::Stream s) {
  CapturedGraph g(s, [&](hy4::rt::Stream cs) {
    for (int k = 0; k < launches; ++k) enqueue(cs);
  });
  for (int w = 0; w < 5; ++w) g.replay();
  hy4::rt::synchronize(s);
  auto b = hy4::rt::create_event(), e = hy4::rt::create_event();
  std::vector<double> us;
  for (int r = 0; r < replays; ++r) {
    hy4::rt::record_event(b, s);
    g.replay();
    hy4::rt::record_event(e, s);
    us.push_back(1000.0 * hy4::rt::elapsed_ms(b, e) / launches);
  }
  hy4::rt::destroy_event(b);
  hy4::rt::destroy_event(e);
  std::sort(us.begin(), us.end());
  return Stats{us[us.size() / 2], us[us.size() / 10], us[us.size() * 9 / 10]};
}

// One table row: op, shape, the graph-replay statistics, the floor of `bytes` at the
// peak bandwidth, the achieved GB/s and the share of the floor.
void print_row(const char* op, const char* shape, const Stats& st, double bytes, double peak_gbs) {
  const double floor_us = bytes / (peak_gbs * 1e3);
  std::printf("%-6s %-22s %10.2f %10.2f %10.2f %10.2f %9.0f %7.1f%%\n", op, shape, st.median_us, st.p10_us,
              st.p90_us, floor_us, bytes / (st.median_us * 1e3), 100.0 * floor_us / st.median_us);
}

}  // namespace

int main(int argc, char** argv) {
  int replays = 200, launches = 20;
  double peak_gbs = 4800;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--replays") replays = std::atoi(argv[i + 1]);
    else if (a == "--launches") launches = std::atoi(argv[i + 1]);
    else if (a == "--peak-gbs") peak_gbs = std::atof(argv[i + 1]);
  }
  if (hy4::rt::device_count() == 0) {
    std::printf("hy4-bench: no %s device: %s\n", hy4::rt::backend_name(), hy4::rt::no_device_reason().c_str());
    return 3;
  }
  hy4::rt::set_device(0);
  std::printf("hy4-bench: %s, %d replays of a graph of %d launches, peak %.0f GB/s\n",
              hy4::rt::device_name().c_str(), replays, launches, peak_gbs);
  std::printf("%-6s %-22s %10s %10s %10s %10s %9s %8s\n", "op", "shape", "median_us", "p10_us", "p90_us",
              "floor_us", "GB/s", "%floor");
  ScopedStream s;
  std::mt19937_64 rng(1);
  for (int64_t T : {1, 8, 64, 512, 4096, 8192, 32768}) {
    const int64_t W = 2048;
    DeviceBuffer<uint16_t> a(T * W), g(T * W), o(T * W);
    std::vector<uint16_t> h(T * W);
    for (auto& v : h) v = static_cast<uint16_t>(0x3c00 + rng() % 0x0800);
    a.upload(h, s);
    g.upload(h, s);
    GatePlan plan(dense_gate_args(a.get(), g.get(), o.get(), T, W));
    const Stats st = time_graph([&](hy4::rt::Stream cs) { plan.launch(cs); }, launches, replays, s);
    const double bytes = 3.0 * T * W * 2;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld W=%lld", static_cast<long long>(T), static_cast<long long>(W));
    print_row("gate", shape, st, bytes, peak_gbs);
  }
  for (int64_t T : {1, 8, 64, 512, 4096, 8192, 32768}) {
    // HY V4 TP8: out [T, 8, 512] bf16 as a stride-2 view of [T, 16, 512]; lse [T, 16]
    // viewed with stride 2; every row 5 keys.  In place, so 100 launches keep scaling.
    const int64_t H = 8, D = 512, P = 16;
    DeviceBuffer<uint16_t> out(T * P * D);
    DeviceBuffer<float> lse(T * P), sinks(H);
    DeviceBuffer<int32_t> indptr(T + 1);
    std::vector<uint16_t> ho(T * P * D);
    for (auto& v : ho) v = static_cast<uint16_t>(0x3c00 + rng() % 0x0800);
    std::vector<float> hl(T * P), hs(H);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    for (auto& v : hl) v = nd(rng);
    for (auto& v : hs) v = nd(rng);
    std::vector<int32_t> hi(T + 1);
    for (int64_t t = 0; t <= T; ++t) hi[t] = static_cast<int32_t>(5 * t);
    out.upload(ho, s);
    lse.upload(hl, s);
    sinks.upload(hs, s);
    indptr.upload(hi, s);
    hy4::rt::synchronize(s);
    SinkArgs a;
    a.out = HeadView{out.get(), DType::BF16, T, H, D, P * D, 2 * D};
    a.lse = HeadView{lse.get(), DType::F32, T, H, 1, P, 2};
    a.sinks = sinks.get();
    a.kv_indptr = indptr.get();
    a.aiter_padded_heads = 16;
    SinkPlan plan(a);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { plan.launch(cs); }, launches, replays, s);
    const double bytes = 2.0 * T * H * D * 2 + 2.0 * T * H * 4 + 4.0 * (T + 1) + 4.0 * H;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld H=8 D=512", static_cast<long long>(T));
    print_row("sink", shape, st, bytes, peak_gbs);
  }
  for (int64_t T : {1, 8, 64, 512, 4096, 8192, 32768}) {
    const int E = 256, k = 8;  // HY V4 routing: fp32 logits, [:, :8] of [T, 9] / [T, 10]
    DeviceBuffer<float> logits(T * E), bias(E), weights(T * 9);
    DeviceBuffer<int32_t> ids(T * 10), count(1);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> hl(T * E), hb(E);
    for (auto& v : hl) v = nd(rng);
    for (auto& v : hb) v = 0.05f * nd(rng);
    logits.upload(hl, s);
    bias.upload(hb, s);
    const int32_t n = static_cast<int32_t>(T);
    hy4::rt::copy_to_device(count.get(), &n, 4, s);
    hy4::rt::synchronize(s);
    TopkArgs a;
    a.logits = MatrixView{logits.get(), DType::F32, T, E, E};
    a.bias = bias.get();
    a.k = k;
    a.routed_scaling_factor = 2.827f;
    a.num_rows = count.get();
    a.weights = MatrixView{weights.get(), DType::F32, T, k, 9};
    a.ids = MatrixView{ids.get(), DType::I32, T, k, 10};
    TopkPlan plan(a);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { plan.launch(cs); }, launches, replays, s);
    const double bytes = 4.0 * T * E + 4.0 * E + 8.0 * T * k;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld E=%d k=%d", static_cast<long long>(T), E, k);
    print_row("topk", shape, st, bytes, peak_gbs);
  }
  for (int64_t T : {1, 8, 64, 512, 4096, 8192, 32768}) {
    // HY V4 routing: k = 8 of [T, 9] ids / weights (topk's outputs), E = 256, block 64,
    // device row count, no zero-fill.
    const int E = 256, k = 8, bs = 64;
    DeviceBuffer<int32_t> ids(T * 9), count(1), sorted(RoutingPlan::max_padded(T, k, E, bs)),
        eob(RoutingPlan::num_blocks(T, k, E, bs)), counts(2), ws(RoutingPlan::workspace_elems(T, E));
    DeviceBuffer<float> w(T * 9), sw(RoutingPlan::max_padded(T, k, E, bs));
    std::vector<int32_t> hi(T * 9);
    std::vector<float> hw(T * 9, 0.125f);
    std::vector<int> perm(E);
    for (int e = 0; e < E; ++e) perm[e] = e;
    for (int64_t t = 0; t < T; ++t) {
      for (int i = 0; i < k; ++i) std::swap(perm[i], perm[i + rng() % (E - i)]);
      for (int s2 = 0; s2 < 9; ++s2) hi[t * 9 + s2] = s2 < k ? perm[s2] : 0;
    }
    ids.upload(hi, s);
    w.upload(hw, s);
    const int32_t n = static_cast<int32_t>(T);
    hy4::rt::copy_to_device(count.get(), &n, 4, s);
    hy4::rt::synchronize(s);
    RoutingArgs a;
    a.ids = MatrixView{ids.get(), DType::I32, T, k, 9};
    a.weights = MatrixView{w.get(), DType::F32, T, k, 9};
    a.experts = E;
    a.block_size = bs;
    a.num_rows = count.get();
    a.sorted_ids = sorted.get();
    a.sorted_weights = sw.get();
    a.expert_of_block = eob.get();
    a.counts = counts.get();
    a.sorted_capacity = RoutingPlan::max_padded(T, k, E, bs);
    a.block_capacity = RoutingPlan::num_blocks(T, k, E, bs);
    a.workspace = ws.get();
    a.workspace_capacity = RoutingPlan::workspace_elems(T, E);
    RoutingPlan plan(a);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { plan.launch(cs); }, launches, replays, s);
    const double bytes = 8.0 * T * k + 8.0 * a.sorted_capacity + 4.0 * a.block_capacity;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld E=%d k=%d blk=%d", static_cast<long long>(T), E, k, bs);
    print_row("routing", shape, st, bytes, peak_gbs);
  }
  return 0;
}
