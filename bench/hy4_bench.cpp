// hy4-bench: the benchmark binary.  Performance claims come from here, never from a
// timed test.  For each op at HY V4 shapes and T in {1, 8, 64, 512, 4096, 8192, 32768}:
// capture K launches into one graph, replay it R times, time each replay with device
// events; report the median (and p10 / p90) us per launch, the bytes the op must move,
// GB/s, and the share of the copy bandwidth measured in this same run: a device-to-
// device copy of 256 MiB (read + write counted), timed the same way.  Also an empty
// kernel's graph node (the fixed cost every row carries).
//
//   hy4-bench [--replays R] [--launches K] [--json FILE] [--ops gate,sink,topk,routing]
//             [--topk-path 0|1|2]   (topk: the plan's choice | warp per row | block per row)
//             [--tokens T,T,...]    (these T in place of the list above, 1 <= T <= 65536: one
//                                    shape under ncu, or a plan split's neighbourhood)
//
// Not Google Benchmark: every row must be one graph-replay measurement beside peers.py
// (which parses these rows: op, T=..., median first), and the copy bandwidth must come
// from the same process.  On the CPU backend the numbers only describe the executor.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "gate.h"
#include "numeric_probe.h"
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

struct Row {
  std::string op, shape;
  int64_t T;
  Stats st;
  double bytes;
};
std::vector<Row> g_rows;
double g_copy_gbs = 0;

// One table row: op, shape, the graph-replay statistics, the bytes that must move, the
// floor of those bytes at the copy bandwidth of this run, GB/s and the share of it.
void print_row(const char* op, const char* shape, const Stats& st, double bytes, int64_t T = -1) {
  const double floor_us = g_copy_gbs > 0 ? bytes / (g_copy_gbs * 1e3) : 0;
  std::printf("%-7s %-24s %10.2f %10.2f %10.2f %12.0f %10.2f %9.0f %7.1f%%\n", op, shape, st.median_us, st.p10_us,
              st.p90_us, bytes, floor_us, bytes / (st.median_us * 1e3), 100.0 * floor_us / st.median_us);
  std::fflush(stdout);
  g_rows.push_back(Row{op, shape, T, st, bytes});
}

void write_json(const std::string& path, int launches, int replays) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "hy4-bench: --json: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "{\n \"device\": \"%s\",\n \"backend\": \"%s\",\n \"launches_per_graph\": %d,\n \"replays\": %d,\n"
               " \"copy_gbs\": %.1f,\n \"rows\": [\n",
               hy4::rt::device_name().c_str(), hy4::rt::backend_name(), launches, replays, g_copy_gbs);
  for (std::size_t i = 0; i < g_rows.size(); ++i) {
    const Row& r = g_rows[i];
    const double floor_us = g_copy_gbs > 0 ? r.bytes / (g_copy_gbs * 1e3) : 0;
    std::fprintf(f,
                 "  {\"op\": \"%s\", \"shape\": \"%s\", \"T\": %lld, \"median_us\": %.3f, \"p10_us\": %.3f, "
                 "\"p90_us\": %.3f, \"bytes\": %.0f, \"gbs\": %.1f, \"floor_us\": %.3f, \"copy_fraction\": %.4f}%s\n",
                 r.op.c_str(), r.shape.c_str(), static_cast<long long>(r.T), r.st.median_us, r.st.p10_us, r.st.p90_us,
                 r.bytes, r.bytes / (r.st.median_us * 1e3), floor_us, floor_us / r.st.median_us,
                 i + 1 < g_rows.size() ? "," : "");
  }
  std::fprintf(f, " ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  int replays = 200, launches = 20;
  std::string json, ops = "gate,sink,topk,routing", tokens;
  int topk_path = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc || a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "usage: hy4-bench [--replays R] [--launches K] [--json FILE] [--ops gate,sink,topk,routing] "
                           "[--topk-path 0|1|2] [--tokens T,T,...]\n");
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--replays") replays = std::atoi(v);
    else if (a == "--launches") launches = std::atoi(v);
    else if (a == "--json") json = v;
    else if (a == "--ops") ops = v;
    else if (a == "--topk-path") topk_path = std::atoi(v);
    else if (a == "--tokens") tokens = v;
    else if (a == "--peak-gbs") continue;  // accepted for old scripts; the floor is the measured copy now
    else {
      std::fprintf(stderr, "hy4-bench: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  if (topk_path < 0 || topk_path > 2) {
    std::fprintf(stderr, "hy4-bench: --topk-path must be 0 (auto), 1 (warp per row) or 2 (block per row)\n");
    return 2;
  }
  if (replays < 1 || launches < 1) {
    std::fprintf(stderr, "hy4-bench: --replays and --launches must be >= 1\n");
    return 2;
  }
  if (hy4::rt::device_count() == 0) {
    std::printf("hy4-bench: no %s device: %s\n", hy4::rt::backend_name(), hy4::rt::no_device_reason().c_str());
    return 3;
  }
  hy4::rt::set_device(0);
  const auto want = [&](const char* op) { return ("," + ops + ",").find("," + std::string(op) + ",") != std::string::npos; };
  // The op rows' T: the HY V4 list, or --tokens (any T in [1, 65536], in the order given).
  std::vector<int64_t> op_tokens = {1, 8, 64, 512, 4096, 8192, 32768};
  if (!tokens.empty()) {
    op_tokens.clear();
    std::size_t at = 0;
    while (at <= tokens.size()) {
      const std::size_t end = std::min(tokens.find(',', at), tokens.size());
      const std::string item = tokens.substr(at, end - at);
      char* stop = nullptr;
      const long long T = std::strtoll(item.c_str(), &stop, 10);
      if (item.empty() || *stop != '\0' || T < 1 || T > 65536) {
        std::fprintf(stderr, "hy4-bench: --tokens: '%s' is not a T in [1, 65536]\n", item.c_str());
        return 2;
      }
      op_tokens.push_back(T);
      at = end + 1;
    }
  }
  ScopedStream cs0;
  {
    // The copy bandwidth of this device in this run: 256 MiB (4 MiB on the CPU backend)
    // copied device to device, read + write counted, timed like every row.
    const std::size_t bytes = hy4::rt::backend() == hy4::rt::Backend::Cpu ? (4u << 20) : (256u << 20);
    DeviceBuffer<uint8_t> src(bytes), dst(bytes);
    hy4::rt::fill_bytes(src.get(), 0x5a, bytes, cs0);
    hy4::rt::synchronize(cs0);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { hy4::rt::copy_on_device(dst.get(), src.get(), bytes, cs); },
                                std::min(launches, 10), std::min(replays, 50), cs0);
    g_copy_gbs = 2.0 * bytes / (st.median_us * 1e3);
    std::printf("hy4-bench: %s, %d replays of a graph of %d launches; copy bandwidth %.0f GB/s (device copy of %zu MiB, "
                "read + write, median %.2f us)\n",
                hy4::rt::device_name().c_str(), replays, launches, g_copy_gbs, bytes >> 20, st.median_us);
  }
  std::printf("%-7s %-24s %10s %10s %10s %12s %10s %9s %8s\n", "op", "shape", "median_us", "p10_us", "p90_us", "bytes",
              "floor_us", "GB/s", "%copy");
  {
    const Stats st = time_graph([&](hy4::rt::Stream cs) { empty_kernel_launch(cs); }, launches, replays, cs0);
    print_row("empty", "1 block x 64, no body", st, 0);
  }
  // A device copy of one [T, 2048] bf16 tensor (read + write) at each T: what a node that
  // only moves a gate-sized row set costs, the floor a kernel reading and writing those
  // bytes cannot beat (no \"T=\" in the shape: peers.py pairs rows by op and T=).
  for (int64_t T : {1, 64, 8192}) {
    const std::size_t bytes = static_cast<std::size_t>(T) * 2048 * 2;
    DeviceBuffer<uint8_t> src(bytes), dst(bytes);
    hy4::rt::fill_bytes(src.get(), 0x3c, bytes, cs0);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { hy4::rt::copy_on_device(dst.get(), src.get(), bytes, cs); },
                                launches, replays, cs0);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%zu B (gate at T %lld)", bytes, static_cast<long long>(T));
    print_row("copy", shape, st, 2.0 * bytes);
  }
  // The sink's out at T = 8192 as the platform's 2-D copy moves it: 1 KiB rows (a head),
  // 2 KiB apart (the stride-2 head view of [T, 16, 512] bf16), read and written: the floor
  // of a strided read + write, beside the dense copy's above.  (GPUs only: 256 MiB.)
  if (hy4::rt::backend() != hy4::rt::Backend::Cpu) {
    const std::size_t row = 1024, pitch = 2048, rows = 8192 * 8;
    DeviceBuffer<uint8_t> src(rows * pitch), dst(rows * pitch);
    hy4::rt::fill_bytes(src.get(), 0x3c, rows * pitch, cs0);
    const Stats st = time_graph(
        [&](hy4::rt::Stream cs) { hy4::rt::copy_2d_on_device(dst.get(), pitch, src.get(), pitch, row, rows, cs); },
        launches, replays, cs0);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%zu B, 1 KiB of 2 KiB (sink at T 8192)", rows * row);
    print_row("copy2d", shape, st, 2.0 * rows * row);
  }
  ScopedStream s;
  std::mt19937_64 rng(1);
  for (int64_t T : op_tokens) {
    if (!want("gate")) break;
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
    print_row("gate", shape, st, bytes, T);
  }
  for (int64_t T : op_tokens) {
    if (!want("sink")) break;
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
    print_row("sink", shape, st, bytes, T);
  }
  for (int64_t T : op_tokens) {
    if (!want("topk")) break;
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
    a.path = static_cast<TopkPath>(topk_path);
    TopkPlan plan(a);
    const Stats st = time_graph([&](hy4::rt::Stream cs) { plan.launch(cs); }, launches, replays, s);
    const double bytes = 4.0 * T * E + 4.0 * E + 8.0 * T * k;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld E=%d k=%d", static_cast<long long>(T), E, k);
    print_row("topk", shape, st, bytes, T);
  }
  for (int64_t T : op_tokens) {
    if (!want("routing")) break;
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
    print_row("routing", shape, st, bytes, T);
  }
  if (!json.empty()) write_json(json, launches, replays);
  return 0;
}
