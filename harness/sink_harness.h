// sink_harness.h: the sink op's differential harness (see gate_harness.h for the shape):
// a case (shape, strides, values from a seed), run eager or replayed, checked bitwise
// against the bit model over the whole out and lse buffers (gaps included) and within
// the float64 bound, plus the empty-row and NaN promises checked directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "conformance.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

// How lse, sinks and kv lengths are drawn.
enum class SinkValues : int {
  Normal = 0,    // lse ~ N(2, 4), sinks ~ N(0, 2), lengths 0..9 (a quarter empty)
  Specials = 1,  // lse -inf / +inf / NaN / huge / tiny at random places, sinks -inf / 0 / large
  Empty = 2,     // every row empty (graph padding); out holds NaN, inf and stale values
  Extreme = 3,   // |lse| and |sink| up to 1e30 and 100 apart: the scale under- and overflows
  Mixed = 4,     // each token one of the above
};

struct SinkShape {
  int64_t T = 0, H = 8, D = 512;
  bool out_bf16 = true;
  int64_t out_head_pad = 0, out_token_pad = 0;  // head stride D + pad; token stride (H-1)*hs + D + pad
  int64_t lse_head_stride = 1, lse_token_pad = 0;
  int64_t out_offset = 0, lse_offset = 0;       // elements before (0, 0)
  int aiter_padded_heads = 0;                   // 0: not an AITER layout
  SinkValues values = SinkValues::Normal;
  std::vector<int32_t> lengths;                 // kv length per token (size T); empty: drawn
};

struct SinkCase {
  uint64_t seed = 0;
  SinkShape shape;
  std::vector<uint32_t> out;        // whole buffer: bf16 bits in the low half, or fp32 bits
  std::vector<uint32_t> lse;        // whole buffer, fp32 bits
  std::vector<uint32_t> sinks;      // [H] fp32 bits
  std::vector<int32_t> kv_indptr;   // [T + 1]
  std::string origin;
  int64_t out_hs() const { return shape.D + shape.out_head_pad; }
  int64_t out_ts() const { return (shape.H - 1) * out_hs() + shape.D + shape.out_token_pad; }
  int64_t lse_hs() const { return shape.lse_head_stride; }
  int64_t lse_ts() const { return (shape.H - 1) * lse_hs() + 1 + shape.lse_token_pad; }
};

struct SinkOutput {
  std::vector<uint32_t> out, lse;  // whole buffers, bits
  bool operator==(const SinkOutput& o) const { return out == o.out && lse == o.lse; }
};

// HY V4 TP8: H = 8 as a stride-2 view of AITER's 16 padded heads, D = 512, bf16, lse
// [T, 16] viewed with stride 2.
SinkShape sink_hyv4_shape(int64_t T);
SinkCase make_sink_case(uint64_t seed, const SinkShape& shape);
SinkCase random_sink_case(uint64_t seed, int64_t max_T);
CaseFile sink_to_file(const SinkCase& c);
SinkCase sink_from_file(const CaseFile& f);

SinkOutput run_sink_eager(const SinkCase& c, hy4::rt::Stream s);
SinkOutput sink_expected(const SinkCase& c);
// Bitwise (whole buffers) vs the bit model; empty rows exactly +0 with lse = sink; a
// NaN lse on an active row gives NaN out and lse; float64 within the bound of
// sink_harness.cpp.
Verdict check_sink(const SinkCase& c, const SinkOutput& got);

// Captures once at `capture`'s shape, then per data case (same shape): writes its
// out, lse, sinks and kv_indptr into the same buffers, except that the out rows of
// empty tokens keep the previous replay's results (stale) with NaN and inf sprinkled
// in; replays.  as_run receives what each replay saw.
std::vector<SinkOutput> run_sink_replays(const SinkCase& capture, const std::vector<SinkCase>& data,
                                         hy4::rt::Stream s, std::vector<SinkCase>* as_run);
// HY V4 shape at T tokens: replays with the upstream length patterns [5,5,5,5],
// [7,0,3,0], [0,2,0,9] (repeated over T) and `generated` drawn ones.
Replays<SinkCase, SinkOutput> sink_graph_scenario(uint64_t seed, int64_t T, int generated, hy4::rt::Stream s);
std::vector<std::string> sink_bad_argument_failures(int* classes);
std::vector<ConformanceRow> conform_sink(const ConformanceOptions& o);

}  // namespace hy4::harness
