// chain_harness.h: the captured topk -> routing chain (SPEC "What the suite proves" 3).
// The one harness file that is not one op's: it joins topk_harness and routing_harness.
//   topk (logits, bias, device row count) writes weights / ids as [:, :8] views of
//   [T, 9] / [T, 10] buffers; routing reads those views and the same row count.
// Captured once into one graph at T rows, replayed with new logits, bias and row counts
// written into the same buffers, the intermediate (topk outputs) and final outputs
// poisoned before each replay.
#pragma once

#include <cstdint>
#include <vector>

#include "conformance.h"
#include "routing_harness.h"
#include "topk_harness.h"

namespace hy4::harness {

struct ChainRun {
  TopkCase topk;              // what the replay's topk saw
  TopkOutput topk_out;        // its outputs as the graph left them (intermediate)
  RoutingOutput routing_out;  // the routing outputs
};

std::vector<ChainRun> run_topk_routing_chain(uint64_t seed, int64_t T, int replays, hy4::rt::Stream s);
// The routing case the chain's routing stage must have seen: topk's bit model output.
RoutingCase chain_routing_case(const TopkCase& t);
// Intermediate == topk bit model, final == routing bit model of that (with invariants),
// and both == eager launches of the two ops on the same data.
Verdict check_chain(const ChainRun& r, hy4::rt::Stream s);
std::vector<ConformanceRow> conform_chain(const ConformanceOptions& o);

// A chain case file (op chain): the seed, T and the replay count re-create the whole
// captured run (every replay's data comes from the seed), so hy4-repro replays it.
CaseFile chain_to_file(uint64_t seed, int64_t T, int replays);
// Runs the chain of the file and checks every replay (merged verdict).
Verdict replay_chain_file(const CaseFile& f, hy4::rt::Stream s);

}  // namespace hy4::harness
