// gate_harness.h: the gate op's differential harness, shared by the properties, the
// fuzzer, the reproducer and the conformance run.
//   make a case (shape + data from a seed)  ->  run it on the backend (eager or replayed)
//   -> check it bitwise against the bit model and within the bound against float64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

struct GateShape {
  int64_t T = 0, W = 1;
  int64_t attn_pad = 0, gate_pad = 0, out_pad = 0;           // row stride = W + pad
  int64_t attn_offset = 0, gate_offset = 0, out_offset = 0;  // elements before row 0 (alignment)
  bool in_place = false;                                     // out is the attn view
  double special_rate = 0.05;                                // share of special values
};

struct GateCase {
  uint64_t seed = 0;
  GateShape shape;
  std::vector<uint16_t> attn, gate, out_init;  // whole buffers (out_init unused in place)
  std::string origin;

  int64_t attn_stride() const { return shape.W + shape.attn_pad; }
  int64_t gate_stride() const { return shape.W + shape.gate_pad; }
  int64_t out_stride() const { return shape.in_place ? attn_stride() : shape.W + shape.out_pad; }
};

// Buffer length holding T rows of W at stride, after offset.
int64_t gate_buffer_elems(int64_t T, int64_t W, int64_t stride, int64_t offset);

// Data from the seed for a given shape.  Padding between rows holds garbage too.
GateCase make_gate_case(uint64_t seed, const GateShape& shape);
// Shape and data from the seed (T <= max_T, W <= max_W, with 2048 and ragged widths).
GateCase random_gate_case(uint64_t seed, int64_t max_T, int64_t max_W);

CaseFile gate_to_file(const GateCase& c);
GateCase gate_from_file(const CaseFile& f);

// Runs the op once on the current backend; returns the whole out buffer.
std::vector<uint16_t> run_gate_eager(const GateCase& c, hy4::rt::Stream s);
// What the whole out buffer must hold afterwards (bit model over the initial buffer).
std::vector<uint16_t> gate_expected(const GateCase& c);
// Bitwise vs the bit model + float64 bound.  The bound (1 bf16 ulp where sigmoid is a
// normal float, an absolute bound below) is justified in gate_harness.cpp.
Verdict check_gate(const GateCase& c, const std::vector<uint16_t>& got_out_buffer);

// Captures the op once at `capture`'s shape, then for each case: writes its data into
// the same buffers (rows >= real_rows[i] keep the previous replay's stale data, with
// NaN sprinkled in), poisons out, replays.  Returns each replay's out buffer and
// fills `as_run` with the case each replay actually saw (for the bit model).
std::vector<std::vector<uint16_t>> run_gate_replays(const GateCase& capture, const std::vector<GateCase>& data,
                                                    const std::vector<int64_t>& real_rows, hy4::rt::Stream s,
                                                    std::vector<GateCase>* as_run);

}  // namespace hy4::harness

#include "conformance.h"

namespace hy4::harness {
// Captures at T rows x 2048 (in place or not), replays `replays` times with new data and
// real row counts 0..T (graph padding), as run_gate_replays describes.
Replays<GateCase, std::vector<uint16_t>> gate_graph_scenario(uint64_t seed, int64_t T, bool in_place,
                                                             int replays, hy4::rt::Stream s);
std::vector<ConformanceRow> conform_gate(const ConformanceOptions& o);

// Tries every bad-argument class of SPEC "Rules" on the gate plan; returns one line
// per class that was accepted, refused without naming the argument, or wrote out.
// `classes` receives how many classes were tried.
std::vector<std::string> gate_bad_argument_failures(int* classes);
}  // namespace hy4::harness
