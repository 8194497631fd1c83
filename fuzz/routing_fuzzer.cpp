// routing_fuzzer: libFuzzer target for the routing op.  Structured input: shape (T, E,
// k, block size, strides, mask, device row count, moe_out width), value mode, warp
// size, eager or graph and seed; the remaining bytes overwrite ids words (so exact
// duplicates, -1 and out-of-range ids land where the fuzzer wants) and then mask words.
// Differential check as in the properties; a failure writes a case file and aborts.
#include <fuzzer/FuzzedDataProvider.h>

#include "device_buffer.h"
#include "platform/runtime.h"
#include "routing.h"
#include "routing_harness.h"

using namespace hy4::harness;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  RoutingShape s;
  // T: decode sizes, up to 300 (one kernel up to kSingleMaxEntries entries, two above),
  // and a few around kChunkTokens x kMaxChunks tokens, where chunks stop multiplying and
  // grow longer instead (those with k <= 4 so an input stays fast).
  const int band = in.ConsumeIntegralInRange<int>(0, 15);  // 0 (decode) when the bytes run out
  const bool long_band = band == 15;  // fuzz/splits/routing holds its seeds
  s.T = long_band ? int64_t{hy4::RoutingPlan::kChunkTokens} * hy4::RoutingPlan::kMaxChunks + in.ConsumeIntegralInRange<int64_t>(-3, 3)
        : band < 8 ? in.ConsumeIntegralInRange<int64_t>(0, 8) : in.ConsumeIntegralInRange<int64_t>(0, 300);
  s.E = in.ConsumeBool() ? 256 : in.ConsumeIntegralInRange<int>(1, 512);
  s.k = in.ConsumeIntegralInRange<int>(1, std::min(s.E, 32));
  if (long_band) s.k = 1 + (s.k - 1) % 4;
  s.block_size = 1 << in.ConsumeIntegralInRange<int>(0, 10);
  s.ids_pad = in.ConsumeIntegralInRange<int64_t>(0, 3);
  s.weights_pad = in.ConsumeIntegralInRange<int64_t>(0, 3);
  s.has_mask = in.ConsumeBool();
  s.has_num_rows = in.ConsumeBool();
  s.num_rows = in.ConsumeIntegralInRange<int64_t>(-2, s.T + 2);
  s.hidden = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 9) : 0;
  s.moe_pad = in.ConsumeIntegralInRange<int64_t>(0, 2);
  s.values = static_cast<RoutingValues>(in.ConsumeIntegralInRange<int>(0, 4));
  const int warp = in.ConsumeBool() ? 64 : 32;
  const bool graph = in.ConsumeBool();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  RoutingCase c = make_routing_case(seed, s);
  for (std::size_t i = 0; in.remaining_bytes() >= 4 && i < c.ids.size() + c.mask.size(); ++i) {
    const uint32_t w = in.ConsumeIntegral<uint32_t>();
    if (i < c.ids.size()) c.ids[i] = w % 7 == 0 ? w : w % static_cast<uint32_t>(s.E + 2);  // mostly near-valid ids
    else c.mask[i - c.ids.size()] = w & 1;
  }
  before_fuzz_run([&] { return routing_to_file(c); }, warp, graph);
  hy4::rt::set_warp_size(warp);
  ScopedStream stream;
  Verdict v;
  if (graph) {
    std::vector<RoutingCase> as_run;
    const auto outs = run_routing_replays(c, {c, c}, stream, &as_run);
    c = as_run[1];
    v = check_routing(c, outs[1]);
  } else {
    v = check_routing(c, run_routing_eager(c, stream));
  }
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : v.summary(), [&] { return routing_to_file(c); }, warp, graph, seed);
  return 0;
}
