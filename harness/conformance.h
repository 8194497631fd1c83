// conformance.h: the rows of the conformance table (op x check -> cases, worst
// error, pass/fail) that hy4-conformance prints.  Each op's harness describes its
// battery (OpBattery) and conform_<op>() runs it through run_battery(), so every op
// is held to the same checks in the same way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "case_file.h"
#include "device_buffer.h"
#include "platform/runtime.h"
#include "verdict.h"

namespace hy4::harness {

struct ConformanceRow {
  std::string op, check;
  int64_t cases = 0;
  std::string worst;  // e.g. "1 ulp (bound 2)", "0 differing elements"
  bool pass = true;
  std::string detail;  // first failure, case file path
};

struct ConformanceOptions {
  int cases_per_seed = 4;       // random cases per seed of the seed list
  std::vector<uint64_t> seeds;  // the suite's seed list
  bool verbose = false;         // print every case's seed
};

// Replays of one captured graph: what each replay saw, and what it produced.
template <class Case, class Output>
struct Replays {
  std::vector<Case> as_run;
  std::vector<Output> outs;
};

template <class Case, class Output>
struct OpBattery {
  std::string op;
  std::string bound_name;  // the float64 row's check name
  // The eager cases: (case, stem for its failure file), from the options' seeds.
  std::function<std::vector<std::pair<Case, std::string>>(const ConformanceOptions&)> cases;
  std::function<Output(const Case&, hy4::rt::Stream)> run;
  std::function<Verdict(const Case&, const Output&)> check;
  std::function<CaseFile(const Case&)> to_file;
  std::function<std::string(const Verdict&)> bound_worst;  // "1 ulp (bound 2)"
  // Graph scenarios (captured once, replayed with new data) for the replay row.
  std::function<std::vector<Replays<Case, Output>>(const ConformanceOptions&, hy4::rt::Stream)> replays;
  std::function<Case(uint64_t seed)> warp_case;  // a case for the wave32 == wave64 row
  std::function<std::vector<std::string>(int* classes)> bad_arguments;
};

// Runs one stage of a row.  An exception (a plan refusing arguments it should accept, a
// runtime error) fails that row with its message, and the battery goes on with the next
// row instead of ending the whole run.
template <class F>
void guarded_stage(ConformanceRow& row, const std::string& where, F&& stage) {
  try {
    stage();
  } catch (const std::exception& e) {
    row.pass = false;
    if (row.detail.empty()) row.detail = where + " threw: " + e.what();
  }
}

template <class Case, class Output>
std::vector<ConformanceRow> run_battery(const OpBattery<Case, Output>& b, const ConformanceOptions& o) {
  std::vector<ConformanceRow> rows;
  ScopedStream s;
  ConformanceRow bit{b.op, "bitwise == bit model (eager)"}, bound{b.op, b.bound_name};
  Verdict all;
  int64_t threw = 0;
  std::vector<std::pair<Case, std::string>> cases;
  guarded_stage(bit, "making the eager cases", [&] { cases = b.cases(o); });
  for (const auto& [c, stem] : cases) {
    Verdict v;
    try {
      v = b.check(c, b.run(c, s));
    } catch (const std::exception& e) {  // a refusal of a valid case fails the case, not the run
      ++threw;
      ++bit.cases;
      ++bound.cases;
      if (bit.detail.empty()) {
        Case keep = c;
        keep.origin = stem;
        bit.detail = "seed " + std::to_string(c.seed) + ": threw: " + e.what() + " -> " +
                     save_failed_case(b.to_file(keep), stem);
      }
      continue;
    }
    if (o.verbose)
      std::printf("  %s seed %llu: %s\n", b.op.c_str(), static_cast<unsigned long long>(c.seed), v.ok() ? "ok" : "FAIL");
    all.merge(v);
    ++bit.cases;
    ++bound.cases;
    if (!v.ok() && bit.detail.empty()) {
      Case keep = c;
      keep.origin = stem;
      bit.detail = "seed " + std::to_string(c.seed) + ": " +
                   (v.first_differences.empty() ? "" : v.first_differences[0]) + " -> " +
                   save_failed_case(b.to_file(keep), stem);
    }
  }
  bit.worst = std::to_string(all.bit_mismatches) + " differing elements of " + std::to_string(all.elements) +
              (threw ? ", " + std::to_string(threw) + " cases threw" : "") + (bit.pass ? "" : "; threw");
  bit.pass = bit.pass && all.bit_mismatches == 0 && threw == 0;
  bound.worst = b.bound_worst(all);
  bound.pass = all.bound_violations == 0;
  if (!bound.pass && !all.first_differences.empty()) bound.detail = all.first_differences[0];
  rows.push_back(bit);
  rows.push_back(bound);

  ConformanceRow graph{b.op, "graph replay == eager == bit model"};
  int64_t diffs = 0;
  guarded_stage(graph, "graph replay", [&] {
    for (const auto& r : b.replays(o, s))
      for (std::size_t k = 0; k < r.outs.size(); ++k) {
        ++graph.cases;
        const Verdict v = b.check(r.as_run[k], r.outs[k]);
        if (!v.ok() || !(b.run(r.as_run[k], s) == r.outs[k])) {
          ++diffs;
          if (graph.detail.empty())
            graph.detail = "replay " + std::to_string(k) + " -> " +
                           save_failed_case(b.to_file(r.as_run[k]), "conformance." + b.op + ".graph." + std::to_string(k));
        }
      }
  });
  graph.worst = std::to_string(diffs) + " replays differ" + (graph.pass ? "" : "; threw");
  graph.pass = graph.pass && diffs == 0;
  rows.push_back(graph);

  ConformanceRow warp{b.op, "wave32 == wave64"};
  if (hy4::rt::supported_warp_sizes().size() < 2) {
    warp.worst = "n/a: device runs warp " + std::to_string(hy4::rt::warp_size()) + " only";
  } else {
    int64_t wdiffs = 0;
    const int before = hy4::rt::warp_size();
    guarded_stage(warp, "wave32 == wave64", [&] {
      for (uint64_t seed : o.seeds) {
        const Case c = b.warp_case(seed);
        hy4::rt::set_warp_size(32);
        const Output a = b.run(c, s);
        hy4::rt::set_warp_size(64);
        const Output d = b.run(c, s);
        ++warp.cases;
        if (!(a == d)) ++wdiffs;
      }
    });
    hy4::rt::set_warp_size(before);
    warp.worst = std::to_string(wdiffs) + " cases differ" + (warp.pass ? "" : "; threw");
    warp.pass = warp.pass && wdiffs == 0;
  }
  rows.push_back(warp);

  ConformanceRow args{b.op, "bad arguments refused, nothing written"};
  int classes = 0;
  std::vector<std::string> fails;
  guarded_stage(args, "the bad-argument classes", [&] { fails = b.bad_arguments(&classes); });
  args.cases = classes;
  args.worst = std::to_string(fails.size()) + " classes mishandled" + (args.pass ? "" : "; threw");
  args.pass = args.pass && fails.empty();
  if (!fails.empty() && args.detail.empty()) args.detail = fails[0];
  rows.push_back(args);
  return rows;
}

}  // namespace hy4::harness
