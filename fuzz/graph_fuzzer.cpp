// graph_fuzzer: libFuzzer target for captured graphs, across ops.  One input is a
// sequence of 1..4 episodes on one stream; each episode picks an op (gate, sink, topk,
// routing) or the topk -> routing chain, a capture shape (small, drawn as the op's
// properties draw it, from a seed), and 1..4 replays, each with new data written into
// the captured buffers and a new row count / kv-length pattern decided by the input
// (for topk and routing: row counts below 0, within T and past T).  Every replay's
// output must equal the bit model of what it saw, and an eager launch of that same
// case must too (so replay == eager); the chain's check does both for each stage.
// Episodes share the stream and the allocator, so one episode's freed buffers hold
// the next one's stale data.  A failure writes the failing replay's case file (replay
// with hy4-repro --graph) and aborts.  HY4_FUZZ_CASE_OUT receives each episode's
// capture case (the last one written is the episode that crashed); a crash that a
// single captured replay does not reproduce keeps the libFuzzer input as its reproducer.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <random>

#include "chain_harness.h"
#include "device_buffer.h"
#include "gate_harness.h"
#include "platform/runtime.h"
#include "routing_harness.h"
#include "sink_harness.h"
#include "topk_harness.h"

using namespace hy4::harness;

namespace {

// One replayed case and its output, both checks; abort with its case file on failure.
template <class Case, class Out, class Check, class Eager, class ToFile>
void check_replay(const Case& c, const Out& replayed, Check check, Eager eager, ToFile to_file, int warp,
                  uint64_t seed, hy4::rt::Stream s) {
  Verdict v = check(c, replayed);
  if (v.ok()) {
    const Verdict e = check(c, eager(c, s));
    if (!e.ok()) {
      v = e;
      v.note("graph_fuzzer: the eager launch of the replayed case failed (the replay passed)");
    }
  } else {
    v.note("graph_fuzzer: replay output");
  }
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : v.summary(), [&] { return to_file(c); }, warp, true, seed);
}

void gate_episode(FuzzedDataProvider& in, uint64_t seed, int replays, int warp, hy4::rt::Stream s) {
  const GateCase cap = random_gate_case(seed, 6, 40);
  before_fuzz_run([&] { return gate_to_file(cap); }, warp, true);
  std::vector<GateCase> data;
  std::vector<int64_t> rows;
  for (int r = 0; r < replays; ++r) {
    data.push_back(make_gate_case(seed + 1 + r, cap.shape));
    rows.push_back(in.ConsumeIntegralInRange<int64_t>(0, cap.shape.T));
  }
  std::vector<GateCase> as_run;
  const auto outs = run_gate_replays(cap, data, rows, s, &as_run);
  for (int r = 0; r < replays; ++r)
    check_replay(as_run[r], outs[r], check_gate, run_gate_eager, gate_to_file, warp, seed, s);
}

void sink_episode(FuzzedDataProvider& in, uint64_t seed, int replays, int warp, hy4::rt::Stream s) {
  SinkCase cap = random_sink_case(seed, 5);
  before_fuzz_run([&] { return sink_to_file(cap); }, warp, true);
  std::vector<SinkCase> data;
  for (int r = 0; r < replays; ++r) {
    SinkShape sh = cap.shape;
    for (auto& len : sh.lengths) len = in.ConsumeIntegralInRange<int32_t>(0, 3);  // 0: an empty (padded) row
    sh.values = static_cast<SinkValues>(in.ConsumeIntegralInRange<int>(0, 4));
    data.push_back(make_sink_case(seed + 1 + r, sh));
  }
  std::vector<SinkCase> as_run;
  const auto outs = run_sink_replays(cap, data, s, &as_run);
  for (int r = 0; r < replays; ++r)
    check_replay(as_run[r], outs[r], check_sink, run_sink_eager, sink_to_file, warp, seed, s);
}

void topk_episode(FuzzedDataProvider& in, uint64_t seed, int replays, int warp, hy4::rt::Stream s) {
  const auto tc = [](uint64_t sd) {
    TopkShape sh;
    std::mt19937_64 rng(sd);
    sh.T = static_cast<int64_t>(rng() % 7);
    sh.E = rng() % 2 ? 256 : 1 + static_cast<int>(rng() % 300);
    sh.k = std::min(sh.E, rng() % 2 ? 8 : 1 + static_cast<int>(rng() % 16));
    sh.bf16 = rng() % 2;
    sh.renormalize = rng() % 2;
    sh.has_num_rows = true;
    sh.values = static_cast<TopkValues>(rng() % 6);
    return sh;
  };
  TopkShape sh = tc(seed);
  const TopkCase cap = make_topk_case(seed, sh);
  before_fuzz_run([&] { return topk_to_file(cap); }, warp, true);
  std::vector<TopkCase> data;
  std::vector<int64_t> rows;
  for (int r = 0; r < replays; ++r) {
    sh.values = static_cast<TopkValues>(in.ConsumeIntegralInRange<int>(0, 5));
    data.push_back(make_topk_case(seed + 1 + r, sh));
    rows.push_back(in.ConsumeIntegralInRange<int64_t>(-2, sh.T + 2));
  }
  std::vector<TopkCase> as_run;
  const auto outs = run_topk_replays(cap, data, rows, s, &as_run);
  for (int r = 0; r < replays; ++r)
    check_replay(as_run[r], outs[r], check_topk, run_topk_eager, topk_to_file, warp, seed, s);
}

void routing_episode(FuzzedDataProvider& in, uint64_t seed, int replays, int warp, hy4::rt::Stream s) {
  // Shapes as the properties draw them, but blocks of at most 64 slots: a block of 1024 at
  // E = 256 is 262144 slots per launch, which kept this fuzzer at a few inputs a second
  // (routing_fuzzer and the properties cover the large blocks).
  RoutingCase cap = random_routing_case(seed, 40);
  if (cap.shape.block_size > 64) {
    cap.shape.block_size = 64;
    cap = make_routing_case(seed, cap.shape);
  }
  before_fuzz_run([&] { return routing_to_file(cap); }, warp, true);
  std::vector<RoutingCase> data;
  for (int r = 0; r < replays; ++r) {
    RoutingShape sh = cap.shape;
    sh.num_rows = in.ConsumeIntegralInRange<int64_t>(-2, sh.T + 2);
    sh.values = static_cast<RoutingValues>(in.ConsumeIntegralInRange<int>(0, 4));
    data.push_back(make_routing_case(seed + 1 + r, sh));
  }
  std::vector<RoutingCase> as_run;
  const auto outs = run_routing_replays(cap, data, s, &as_run);
  for (int r = 0; r < replays; ++r)
    check_replay(as_run[r], outs[r], check_routing, run_routing_eager, routing_to_file, warp, seed, s);
}

void chain_episode(FuzzedDataProvider& in, uint64_t seed, int replays, int warp, hy4::rt::Stream s) {
  const int64_t T = in.ConsumeIntegralInRange<int64_t>(0, 24);
  const CaseFile f = chain_to_file(seed, T, replays);  // the seed re-creates every replay
  before_fuzz_run([&] { return f; }, warp, true);
  const Verdict v = replay_chain_file(f, s);
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : "chain topk -> routing: " + v.summary(), [&] { return f; },
                    warp, true, seed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int warp = in.ConsumeBool() ? 64 : 32;
  const int episodes = in.ConsumeIntegralInRange<int>(1, 4);
  hy4::rt::set_warp_size(warp);
  ScopedStream stream;
  for (int e = 0; e < episodes && in.remaining_bytes() > 0; ++e) {
    const int op = in.ConsumeIntegralInRange<int>(0, 4);
    const int replays = in.ConsumeIntegralInRange<int>(1, 4);
    const uint64_t seed = in.ConsumeIntegral<uint64_t>();
    switch (op) {
      case 0: gate_episode(in, seed, replays, warp, stream); break;
      case 1: sink_episode(in, seed, replays, warp, stream); break;
      case 2: topk_episode(in, seed, replays, warp, stream); break;
      case 3: routing_episode(in, seed, replays, warp, stream); break;
      default: chain_episode(in, seed, replays, warp, stream); break;
    }
  }
  return 0;
}
