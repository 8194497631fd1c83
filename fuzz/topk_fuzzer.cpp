// topk_fuzzer: libFuzzer target for the topk op.  Structured input: shape (E, k, dtype,
// strides, offsets, renormalize, rsf, device row count), warp size, eager or graph,
// value mode and seed; the remaining bytes overwrite logits (and then bias) words, so
// the fuzzer can plant exact ties, one-ulp gaps, NaN and infinities.  Differential
// check as in the properties; a failure writes a case file for hy4-repro and aborts.
#include <fuzzer/FuzzedDataProvider.h>


#include "device_buffer.h"
#include "platform/runtime.h"
#include "topk.h"
#include "topk_harness.h"

using namespace hy4::harness;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  TopkShape s;
  // T: most inputs up to 24 rows (on the warp path: one block of rows, then several;
  // the forced paths below reach both kernels at any T), a few around
  // kBlockPerRowMaxRows, where the auto plan changes from a block per row to a warp per row.
  // The long band on one byte value that mutations rarely make (not 0x00 / 0xFF / 0x7F /
  // 0x80): its inputs cost ~100 short ones (fuzz/splits/ holds its seeds, replayed by
  // fuzz.<op>.corpus but not fuzzed from).
  const bool long_band = in.ConsumeIntegral<uint8_t>() == 0xA5;  // 0 when the bytes run out
  s.T = long_band ? hy4::TopkPlan::kBlockPerRowMaxRows + in.ConsumeIntegralInRange<int64_t>(-3, 3)
                  : in.ConsumeIntegralInRange<int64_t>(0, 24);
  s.E = in.ConsumeBool() ? 256 : in.ConsumeIntegralInRange<int>(1, 512);
  s.k = in.ConsumeIntegralInRange<int>(1, std::min(s.E, 32));
  s.bf16 = in.ConsumeBool();
  s.logits_pad = in.ConsumeIntegralInRange<int64_t>(0, 8);
  s.weights_pad = in.ConsumeIntegralInRange<int64_t>(0, 3);
  s.ids_pad = in.ConsumeIntegralInRange<int64_t>(0, 3);
  s.logits_offset = in.ConsumeIntegralInRange<int64_t>(0, 4);
  s.renormalize = in.ConsumeBool();
  s.rsf = in.ConsumeBool() ? 2.827f : in.ConsumeFloatingPointInRange<float>(-4.0f, 4.0f);
  s.has_num_rows = in.ConsumeBool();
  // num_rows up to T + 2, and at least up to 10: the range the corpus was made with (T <= 8)
  s.num_rows = in.ConsumeIntegralInRange<int64_t>(-2, std::max<int64_t>(10, s.T + 2));
  s.values = static_cast<TopkValues>(in.ConsumeIntegralInRange<int>(0, 5));
  s.path = in.ConsumeIntegralInRange<int>(0, 2);  // auto | warp per row | block per row
  const int warp = in.ConsumeBool() ? 64 : 32;
  const bool graph = in.ConsumeBool();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  TopkCase c = make_topk_case(seed, s);
  const uint32_t mask = s.bf16 ? 0xFFFFu : 0xFFFFFFFFu;
  for (std::size_t i = 0; in.remaining_bytes() >= 4 && i < c.logits.size() + c.bias.size(); ++i) {
    const uint32_t w = in.ConsumeIntegral<uint32_t>();
    if (i < c.logits.size())
      c.logits[i] = w & mask;
    else
      c.bias[i - c.logits.size()] = w;
  }
  before_fuzz_run([&] { return topk_to_file(c); }, warp, graph);
  hy4::rt::set_warp_size(warp);
  ScopedStream stream;
  Verdict v;
  if (graph) {
    std::vector<TopkCase> as_run;
    const auto outs = run_topk_replays(c, {c}, {c.shape.has_num_rows ? c.shape.num_rows : c.shape.T}, stream, &as_run);
    c = as_run[0];
    v = check_topk(c, outs[0]);
  } else {
    v = check_topk(c, run_topk_eager(c, stream));
  }
  finish_fuzz_input(v.ok(), v.ok() ? std::string() : v.summary(), [&] { return topk_to_file(c); }, warp, graph, seed);
  return 0;
}
