// sink_fuzzer: libFuzzer target for the sink op.  Structured input: shape (T, H, D,
// dtype, head / token pads, lse strides, offsets), value mode, warp size, eager or
// graph and seed; then one kv length per token for the first 16 tokens, repeating past
// them (so empty rows can sit anywhere), and the remaining bytes overwrite lse words and
// then sinks, so the fuzzer can plant -inf, +inf, NaN and extreme values exactly.
// Differential check as in the properties; a failure writes a case file for hy4-repro
// and aborts.
#include <fuzzer/FuzzedDataProvider.h>

#include "device_buffer.h"
#include "platform/runtime.h"
#include "sink.h"
#include "sink_harness.h"

using namespace hy4::harness;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  SinkShape s;
  // T: most inputs up to 12 tokens; on rare byte values (not 0x00 / 0xFF / 0x7F / 0x80)
  // a band on either side of kSpreadHeadsMaxTokens, or of 2048, where tokens_per_block
  // goes from 1 to 2 (a set of several tokens, a last set short of one).  The step to 3
  // and 4 tokens per set (3072, 4096) runs the same code with more tokens and is left to
  // the properties: a block is 256 threads whatever the shape, so 2048 tokens cost the
  // executor ~1000 blocks (0.1 - 0.4 s an input against ~2 ms), with at most 2 heads of 8
  // elements.  fuzz/splits/sink holds the bands' seeds, replayed by fuzz.sink.corpus but
  // not fuzzed from.  Lengths past the first 16 tokens repeat (make_sink_case).
  const uint8_t band = in.ConsumeIntegral<uint8_t>();  // 0 (short) when the bytes run out
  const int64_t split = band == 0x5A ? hy4::SinkPlan::kSpreadHeadsMaxTokens
                        : band == 0xA5 ? 2 * hy4::SinkPlan::kTokensPerBlockStep : 0;
  s.T = split ? split + in.ConsumeIntegralInRange<int64_t>(-3, 3) : in.ConsumeIntegralInRange<int64_t>(0, 12);
  s.H = in.ConsumeBool() ? 8 : in.ConsumeIntegralInRange<int64_t>(1, 40);
  s.D = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 72) : in.ConsumeIntegralInRange<int64_t>(1, std::min<int64_t>(1024, 1024 / s.H + 1));
  if (split > 64) s.H = 1 + (s.H - 1) % 2, s.D = 1 + (s.D - 1) % 8;
  s.out_bf16 = in.ConsumeBool();
  s.out_head_pad = in.ConsumeIntegralInRange<int64_t>(0, 9);
  s.out_token_pad = in.ConsumeIntegralInRange<int64_t>(0, 9);
  s.lse_head_stride = in.ConsumeIntegralInRange<int64_t>(1, 3);
  s.lse_token_pad = in.ConsumeIntegralInRange<int64_t>(0, 2);
  s.out_offset = in.ConsumeIntegralInRange<int64_t>(0, 8);
  s.lse_offset = in.ConsumeIntegralInRange<int64_t>(0, 2);
  s.values = static_cast<SinkValues>(in.ConsumeIntegralInRange<int>(0, 4));
  const int warp = in.ConsumeBool() ? 64 : 32;
  const bool graph = in.ConsumeBool();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  for (int64_t t = 0; t < std::min<int64_t>(s.T, 16); ++t) s.lengths.push_back(in.ConsumeIntegralInRange<int32_t>(0, 3));
  SinkCase c = make_sink_case(seed, s);
  for (std::size_t i = 0; in.remaining_bytes() >= 4 && i < c.lse.size() + c.sinks.size(); ++i) {
    const uint32_t w = in.ConsumeIntegral<uint32_t>();
    if (i < c.lse.size()) c.lse[i] = w;
    else c.sinks[i - c.lse.size()] = w;
  }
  before_fuzz_run([&] { return sink_to_file(c); }, warp, graph);
  hy4::rt::set_warp_size(warp);
  ScopedStream stream;
  Verdict v;
  if (graph) {
    std::vector<SinkCase> as_run;
    const auto outs = run_sink_replays(c, {c, c}, stream, &as_run);
    c = as_run[1];
    v = check_sink(c, outs[1]);
  } else {
    v = check_sink(c, run_sink_eager(c, stream));
  }
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : v.summary(), [&] { return sink_to_file(c); }, warp, graph, seed);
  return 0;
}
