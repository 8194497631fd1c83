// gate_fuzzer: libFuzzer target for the gate op.  The input is structured (see
// parse below): shape, strides, offsets, in-place, warp size, eager or graph, then the
// attn / gate bits (the rest from a seed); T reaches both sides of every row split of
// the plan.  Each input runs the differential check (bitwise vs the bit model, float64
// bound, nothing outside the view written); a failure writes a case file for hy4-repro
// and aborts.
#include <fuzzer/FuzzedDataProvider.h>


#include "device_buffer.h"
#include "gate.h"
#include "gate_harness.h"
#include "platform/runtime.h"

using namespace hy4::harness;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  GateShape s;
  // T on both sides of each of the plan's row splits: the decode kernel below
  // kSliceBelowRows rows and gate_kernel from there (most inputs), one block per two rows
  // from kPairFromRows (a few, with narrow rows so an input stays fast).
  // The long band on one byte value that mutations rarely make (not 0x00 / 0xFF / 0x7F /
  // 0x80): its inputs cost ~100 short ones (fuzz/splits/ holds its seeds, replayed by
  // fuzz.<op>.corpus but not fuzzed from).
  const bool long_band = in.ConsumeIntegral<uint8_t>() == 0xA5;  // 0 when the bytes run out
  s.T = long_band ? hy4::GatePlan::kPairFromRows + in.ConsumeIntegralInRange<int64_t>(-6, 6)
                  : in.ConsumeIntegralInRange<int64_t>(0, 2 * hy4::GatePlan::kSliceBelowRows + 4);
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: s.W = in.ConsumeIntegralInRange<int64_t>(1, 40); break;
    case 1: s.W = 2048 + in.ConsumeIntegralInRange<int64_t>(-9, 9); break;
    case 2: s.W = 8 * in.ConsumeIntegralInRange<int64_t>(1, 64); break;
    default: s.W = in.ConsumeIntegralInRange<int64_t>(1, 2600); break;
  }
  if (long_band) s.W = 1 + (s.W - 1) % 48;
  s.attn_pad = in.ConsumeIntegralInRange<int64_t>(0, 17);
  s.gate_pad = in.ConsumeIntegralInRange<int64_t>(0, 17);
  s.out_pad = in.ConsumeIntegralInRange<int64_t>(0, 17);
  s.attn_offset = in.ConsumeIntegralInRange<int64_t>(0, 8);
  s.gate_offset = in.ConsumeIntegralInRange<int64_t>(0, 8);
  s.out_offset = in.ConsumeIntegralInRange<int64_t>(0, 8);
  s.in_place = in.ConsumeBool();
  const int warp = in.ConsumeBool() ? 64 : 32;
  const bool graph = in.ConsumeBool();
  s.special_rate = in.ConsumeProbability<double>();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  GateCase c = make_gate_case(seed, s);
  // The remaining bytes overwrite attn and gate elements, interleaved, from the start.
  for (std::size_t i = 0; in.remaining_bytes() >= 4; ++i) {
    if (i < c.attn.size()) c.attn[i] = in.ConsumeIntegral<uint16_t>();
    if (i < c.gate.size()) c.gate[i] = in.ConsumeIntegral<uint16_t>();
    if (i >= c.attn.size() && i >= c.gate.size()) break;
  }
  before_fuzz_run([&] { return gate_to_file(c); }, warp, graph);
  hy4::rt::set_warp_size(warp);
  ScopedStream stream;
  Verdict v;
  if (graph) {
    std::vector<GateCase> as_run;
    const auto outs = run_gate_replays(c, {c}, {c.shape.T}, stream, &as_run);
    v = check_gate(as_run[0], outs[0]);
    c = as_run[0];
  } else {
    v = check_gate(c, run_gate_eager(c, stream));
  }
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : v.summary(), [&] { return gate_to_file(c); }, warp, graph, seed);
  return 0;
}
