// refusals.h: the argument checks every op's harness runs, both sides of each limit:
//  - refusals: each class of bad arguments, applied to a good set, must make the plan
//    throw ArgumentError with a message naming the argument (the case's `text`);
//  - limits: arguments exactly at a documented limit (rows = kMaxRows, say) must be
//    accepted.  Only the plan is built, nothing is launched, so a limit case's views may
//    describe more memory than the buffers hold: far_address(n) puts view n 2^40 bytes
//    from the others, so rows past the buffers cannot overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "op_common.h"

namespace hy4::harness {

// One edit of a good argument set: what it shows (a refusal: the text the message must
// mention; a limit: the limit's name) and the edit.
template <class Args>
struct ArgsCase {
  const char* text;
  void (*mutate)(Args&);
};
template <class Args>
using RefusalClass = ArgsCase<Args>;
template <class Args>
using LimitCase = ArgsCase<Args>;

// A fake device address for a plan-only limit case, n x 2^40 (never dereferenced).
inline void* far_address(int n) { return reinterpret_cast<void*>(static_cast<uintptr_t>(n) << 40); }

// The address just past a view's last element: where a view may start without overlapping
// it (its last row's padding is not part of it).
inline void* past_last_element(const MatrixView& v) {
  return static_cast<char*>(v.data) + ((v.rows - 1) * v.row_stride + v.cols) * dtype_size(v.dtype);
}

// Returns one line per class the plan accepted or refused without naming the argument
// (and one if the good arguments were refused).
template <class Plan, class Args, std::size_t N>
std::vector<std::string> refusal_failures(const Args& good, const RefusalClass<Args> (&classes)[N]) {
  std::vector<std::string> failures;
  try {
    Plan ok(good);
  } catch (const std::exception& e) {
    failures.push_back(std::string("the good arguments were refused: ") + e.what());
  }
  for (const auto& c : classes) {
    Args x = good;
    c.mutate(x);
    try {
      Plan plan(x);
      failures.push_back(std::string("accepted (should mention ") + c.text + ")");
    } catch (const ArgumentError& e) {
      if (std::string(e.what()).find(c.text) == std::string::npos)
        failures.push_back(std::string("message '") + e.what() + "' does not mention " + c.text);
    }
  }
  return failures;
}

// Returns one line per limit case the plan refused.
template <class Plan, class Args, std::size_t N>
std::vector<std::string> limit_failures(const Args& good, const LimitCase<Args> (&cases)[N]) {
  std::vector<std::string> failures;
  for (const auto& c : cases) {
    Args x = good;
    c.mutate(x);
    try {
      Plan plan(x);
    } catch (const std::exception& e) {
      failures.push_back(std::string("refused at the limit (") + c.text + "): " + e.what());
    }
  }
  return failures;
}

}  // namespace hy4::harness
