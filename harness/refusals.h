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

}  // namespace hy4::harness
