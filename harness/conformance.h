// conformance.h: the rows of the conformance table (op x check -> cases, worst
// error, pass/fail) that hy4-conformance prints.  Each op's harness supplies its
// battery: conform_<op>(options).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hy4::harness {

struct ConformanceRow {
  std::string op, check;
  int64_t cases = 0;
  std::string worst;  // e.g. "1 ulp (bound 2)", "0 differing elements"
  bool pass = true;
  std::string detail;  // first failure, case file path
};

struct ConformanceOptions {
  int cases_per_seed = 4;      // random cases per seed of the seed list
  std::vector<uint64_t> seeds;  // the suite's seed list
  bool verbose = false;         // print every case's seed
};

std::vector<ConformanceRow> conform_gate(const ConformanceOptions& o);

}  // namespace hy4::harness
