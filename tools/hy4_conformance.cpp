// hy4-conformance: the project's main job.  Runs every op's battery on this build's
// backend (random cases from the suite's seed list and the HY V4 production shapes,
// bitwise vs the bit model, float64 bound, graph replay, wave32 == wave64, bad
// arguments) and prints the table op x check -> cases, worst error, pass/fail.
//
//   hy4-conformance [--require-gpu] [--cases-per-seed N] [--verbose]
//
// Exit 0: every row passes.  1: a row fails (its case file is named).  3: no device
// (with --require-gpu this is a failure, without it the run is reported as skipped).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "conformance.h"
#include "gate_harness.h"
#include "sink_harness.h"
#include "topk_harness.h"
#include "routing_harness.h"
#include "chain_harness.h"
#include "session.h"

int main(int argc, char** argv) {
  hy4::harness::ConformanceOptions o;
  bool require_gpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--require-gpu") require_gpu = true;
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--cases-per-seed" && i + 1 < argc) o.cases_per_seed = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: hy4-conformance [--require-gpu] [--cases-per-seed N] [--verbose]\n");
      return 2;
    }
  }
  o.seeds = hy4::harness::seed_list();
  if (hy4::rt::device_count() == 0) {
    std::printf("hy4-conformance: backend %s has no device: %s\n", hy4::rt::backend_name(),
                hy4::rt::no_device_reason().c_str());
    std::printf("%s\n", require_gpu ? "FAILED: a GPU was required" : "SKIPPED: nothing was run");
    return 3;
  }
  if (require_gpu && hy4::rt::backend() == hy4::rt::Backend::Cpu) {
    std::printf("hy4-conformance: FAILED: a GPU was required but this build is the cpu backend\n");
    return 3;
  }
  std::string assigned;
  try {
    assigned = hy4::harness::select_assigned_device();
  } catch (const std::exception& e) {
    std::printf("hy4-conformance: FAILED: %s\n", e.what());
    return 1;
  }
  if (assigned.empty()) hy4::rt::set_device(0);
  else std::printf("hy4-conformance: %s\n", assigned.c_str());
  std::printf("hy4-conformance: backend %s, device %s, %zu seeds x %d random cases per op\n\n",
              hy4::rt::backend_name(), hy4::rt::device_name().c_str(), o.seeds.size(), o.cases_per_seed);
  std::vector<hy4::harness::ConformanceRow> rows;
  // Each battery catches what its own stages throw; this is the last net, so that one
  // op's failure is a FAIL row and the other ops still run.
  const std::pair<const char*, std::vector<hy4::harness::ConformanceRow> (*)(const hy4::harness::ConformanceOptions&)>
      batteries[] = {{"gate", hy4::harness::conform_gate},
                     {"sink", hy4::harness::conform_sink},
                     {"topk", hy4::harness::conform_topk},
                     {"routing", hy4::harness::conform_routing},
                     {"chain", hy4::harness::conform_chain}};
  for (const auto& [op, conform] : batteries) {
    try {
      for (auto& r : conform(o)) rows.push_back(r);
    } catch (const std::exception& e) {
      rows.push_back({op, "battery", 0, "threw", false, std::string("threw: ") + e.what()});
    }
  }

  std::printf("%-8s %-40s %7s  %-36s %s\n", "op", "check", "cases", "worst", "result");
  std::printf("%s\n", std::string(100, '-').c_str());
  bool ok = true;
  for (const auto& r : rows) {
    std::printf("%-8s %-40s %7lld  %-36s %s\n", r.op.c_str(), r.check.c_str(), static_cast<long long>(r.cases),
                r.worst.c_str(), r.pass ? "PASS" : "FAIL");
    if (!r.detail.empty()) std::printf("         %s\n", r.detail.c_str());
    ok = ok && r.pass;
  }
  std::printf("\n%s\n", ok ? "CONFORMANCE PASS" : "CONFORMANCE FAIL");
  return ok ? 0 : 1;
}
