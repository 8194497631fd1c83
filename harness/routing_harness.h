// routing_harness.h: the routing op's differential harness (see gate_harness.h for the
// shape): a case (shape, strides, ids / weights / mask / row count from a seed), run
// eager or replayed, checked bitwise against the bit model (whole output buffers with
// a guard past each end), the bit model against the sort-based reference, and the
// layout invariants of routing.h on the kernel's own output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "conformance.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

enum class RoutingValues : int {
  TopkLike = 0,    // k distinct experts per row (what topk produces)
  Duplicates = 1,  // ids from a few experts, repeated within rows
  Invalid = 2,     // -1 (padded rows), negative and >= E ids at random places
  Skewed = 3,      // most entries on one or two experts (long segments, many empty experts)
  Mixed = 4,       // each row one of the above
};

struct RoutingShape {
  int64_t T = 0;
  int E = 256, k = 8, block_size = 64;
  int64_t ids_pad = 1, weights_pad = 1;  // row stride k + pad (upstream: [:, :8] of [T, 9])
  bool has_mask = false;                 // expert-parallel mask: about half the experts
  bool has_num_rows = false;
  int64_t num_rows = 0;                  // device row count (clamped by the kernel)
  int64_t hidden = 0;                    // moe_out [T, hidden] bf16 zero-fill; 0: none
  int64_t moe_pad = 0;
  RoutingValues values = RoutingValues::TopkLike;
};

struct RoutingCase {
  uint64_t seed = 0;
  RoutingShape shape;
  std::vector<uint32_t> ids, weights;  // whole buffers [T * stride] (int32 / fp32 bits)
  std::vector<uint32_t> mask;          // [E] when has_mask
  std::vector<uint16_t> moe_out;       // whole buffer when hidden > 0 (poison in it)
  std::string origin;
  int64_t ids_stride() const { return shape.k + shape.ids_pad; }
  int64_t weights_stride() const { return shape.k + shape.weights_pad; }
  int64_t moe_stride() const { return shape.hidden + shape.moe_pad; }
  int64_t real_rows() const;
  int64_t max_padded() const;
  int64_t num_blocks() const;
};

struct RoutingOutput {
  std::vector<uint32_t> sorted_ids, sorted_weights, expert_of_block, counts;  // with guards
  std::vector<uint16_t> moe_out;
  bool operator==(const RoutingOutput& o) const {
    return sorted_ids == o.sorted_ids && sorted_weights == o.sorted_weights && expert_of_block == o.expert_of_block &&
           counts == o.counts && moe_out == o.moe_out;
  }
};

// Guard elements after each output: poisoned before the launch, must keep their bits.
constexpr int64_t kRoutingGuard = 16;
constexpr uint32_t kRoutingPoison = 0xA5A5A5A5u;

RoutingCase make_routing_case(uint64_t seed, const RoutingShape& shape);
RoutingCase random_routing_case(uint64_t seed, int64_t max_T);
CaseFile routing_to_file(const RoutingCase& c);
RoutingCase routing_from_file(const CaseFile& f);

RoutingOutput run_routing_eager(const RoutingCase& c, hy4::rt::Stream s);
RoutingOutput routing_expected(const RoutingCase& c);
Verdict check_routing(const RoutingCase& c, const RoutingOutput& got);

// Capture once at `capture`'s shape (device row count and mask buffers present when
// the capture has them), then per data case (same shape): new ids, weights, mask and
// row count written into the same buffers, every output and moe_out poisoned; replay.
std::vector<RoutingOutput> run_routing_replays(const RoutingCase& capture, const std::vector<RoutingCase>& data,
                                               hy4::rt::Stream s, std::vector<RoutingCase>* as_run);
Replays<RoutingCase, RoutingOutput> routing_graph_scenario(uint64_t seed, int64_t T, int replays, hy4::rt::Stream s);
std::vector<std::string> routing_bad_argument_failures(int* classes);
std::vector<ConformanceRow> conform_routing(const ConformanceOptions& o);

}  // namespace hy4::harness
