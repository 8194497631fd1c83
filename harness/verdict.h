// verdict.h: the outcome of one differential check, the same shape for every op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hy4::harness {

struct Verdict {
  int64_t elements = 0;        // output elements compared
  int64_t bit_mismatches = 0;  // vs the bit model (the whole output buffer, gaps included)
  int64_t bound_violations = 0;  // vs the float64 reference, beyond the stated bound
  double worst_ulp = 0;          // largest error vs float64 seen, in ULPs of the output type
  double bound_ulp = 0;          // the stated bound (merged: the largest of them)
  std::vector<std::string> first_differences;  // at most kMaxReported, human readable

  static constexpr std::size_t kMaxReported = 8;
  bool ok() const { return bit_mismatches == 0 && bound_violations == 0; }
  void note(const std::string& what) {
    if (first_differences.size() < kMaxReported) first_differences.push_back(what);
  }
  std::string summary() const;
  // Merges another verdict (conformance tables; the chain's two ops): counts add up.
  void merge(const Verdict& o);
};

inline std::string Verdict::summary() const {
  std::string s = std::to_string(elements) + " elements, " + std::to_string(bit_mismatches) +
                  " differ from the bit model, " + std::to_string(bound_violations) +
                  " beyond the float64 bound of " + std::to_string(bound_ulp) + " ulp (worst " +
                  std::to_string(worst_ulp) + " ulp)";
  for (const auto& d : first_differences) s += "\n  " + d;
  return s;
}

inline void Verdict::merge(const Verdict& o) {
  elements += o.elements;
  bit_mismatches += o.bit_mismatches;
  bound_violations += o.bound_violations;
  if (o.worst_ulp > worst_ulp) worst_ulp = o.worst_ulp;
  if (o.bound_ulp > bound_ulp) bound_ulp = o.bound_ulp;
  for (const auto& d : o.first_differences) note(d);
}

}  // namespace hy4::harness
