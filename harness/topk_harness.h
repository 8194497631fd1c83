// topk_harness.h: the topk op's differential harness (see gate_harness.h for the shape).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "conformance.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

// How a case's values are drawn.
enum class TopkValues : int {
  Normal = 0,     // logits ~ N(0, 2), bias ~ N(0, 0.05)
  Ties = 1,       // logits and bias from tiny sets: many exactly equal choice scores
  UlpApart = 2,   // equal logits, bias 0 / 1 / 2 ulp apart: choice scores one ulp apart
  Specials = 3,   // NaN / +-inf / +-0 / subnormal logits and bias at random places
  Underflow = 4,  // logits in [-120, -90]: every sigmoid 0, the sum floor
  Mixed = 5,      // each row one of the above
};

struct TopkShape {
  int64_t T = 0;
  int E = 256, k = 8;
  bool bf16 = false;
  int64_t logits_pad = 0, weights_pad = 1, ids_pad = 2;  // row stride = E (k) + pad
  int64_t logits_offset = 0;
  bool renormalize = true;
  float rsf = 2.827f;
  bool has_num_rows = false;  // pass a device row count
  int64_t num_rows = 0;       // its value (clamped to [0, T] by the kernel)
  TopkValues values = TopkValues::Normal;
  int path = 0;               // TopkPath: 0 the plan's choice, 1 warp per row, 2 block per row
};

struct TopkCase {
  uint64_t seed = 0;
  TopkShape shape;
  std::vector<uint32_t> logits;  // fp32 bits, or bf16 bits in the low half
  std::vector<uint32_t> bias;    // fp32 bits [E]
  std::vector<uint32_t> weights_init, ids_init;  // poison
  std::string origin;
  int64_t logits_stride() const { return shape.E + shape.logits_pad; }
  int64_t weights_stride() const { return shape.k + shape.weights_pad; }
  int64_t ids_stride() const { return shape.k + shape.ids_pad; }
  int64_t real_rows() const;
};

struct TopkOutput {
  std::vector<uint32_t> weights, ids;  // whole buffers, bits
  bool operator==(const TopkOutput& o) const { return weights == o.weights && ids == o.ids; }
};

TopkCase make_topk_case(uint64_t seed, const TopkShape& shape);
TopkCase random_topk_case(uint64_t seed, int64_t max_T);
CaseFile topk_to_file(const TopkCase& c);
TopkCase topk_from_file(const CaseFile& f);

TopkOutput run_topk_eager(const TopkCase& c, hy4::rt::Stream s);
TopkOutput topk_expected(const TopkCase& c);
// Bitwise vs the bit model (whole buffers); float64: the choice (every chosen expert's
// c within tolerance of every unchosen one, ranks ordered within tolerance) and the
// weights within the ULP bound.  Bounds justified in topk_harness.cpp.
Verdict check_topk(const TopkCase& c, const TopkOutput& got);

// Capture once at `capture`'s shape (with a device row count), then per data case:
// new logits and bias, a new real row count written into the same device buffer,
// outputs poisoned; replay.  as_run receives what each replay saw.
std::vector<TopkOutput> run_topk_replays(const TopkCase& capture, const std::vector<TopkCase>& data,
                                         const std::vector<int64_t>& real_rows, hy4::rt::Stream s,
                                         std::vector<TopkCase>* as_run);

// Captures at T rows (fp32 or bf16 logits, mixed values), replays `replays` times with
// new data and device row counts below 0, within [0, T] and past T.
Replays<TopkCase, TopkOutput> topk_graph_scenario(uint64_t seed, int64_t T, bool bf16, int replays,
                                                  hy4::rt::Stream s);
std::vector<std::string> topk_bad_argument_failures(int* classes);
std::vector<ConformanceRow> conform_topk(const ConformanceOptions& o);

}  // namespace hy4::harness
