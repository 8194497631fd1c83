// refusals.h: the bad-argument check every op's harness runs: each class of bad
// arguments, applied to a good set, must make the plan throw ArgumentError with a
// message naming the argument (the `must_mention` text).
#pragma once

#include <string>
#include <vector>

#include "op_common.h"

namespace hy4::harness {

template <class Args>
struct RefusalClass {
  const char* must_mention;
  void (*mutate)(Args&);
};

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
      failures.push_back(std::string("accepted (should mention ") + c.must_mention + ")");
    } catch (const ArgumentError& e) {
      if (std::string(e.what()).find(c.must_mention) == std::string::npos)
        failures.push_back(std::string("message '") + e.what() + "' does not mention " + c.must_mention);
    }
  }
  return failures;
}

// The other side of each limit: arguments exactly at a documented limit (rows = kMaxRows,
// say) must be accepted.  Only the plan is built; nothing is launched, so the views may
// describe more memory than the buffers hold.
template <class Args>
struct LimitCase {
  const char* what;
  void (*mutate)(Args&);
};

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
      failures.push_back(std::string("refused at the limit (") + c.what + "): " + e.what());
    }
  }
  return failures;
}

}  // namespace hy4::harness
