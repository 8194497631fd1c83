// suite.h: what every op's property tests share: backend gating (no silent passes),
// the seed list, warp-size switching on the CPU backend, failure case files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "session.h"
#include "platform/runtime.h"

namespace hy4::test {

// Seeds, device presence and CTest's GPU assignment live in the harness (session.h).
using harness::ctest_assignment;
using harness::device_absence_reason;
using harness::device_present;
using harness::device_required;
using harness::runnable_warp_sizes;
using harness::seed_list;
using harness::select_assigned_device;
using harness::use_warp_size;

// Saves the failing case to hy4-failed-cases/<stem>.case and returns a line for the
// failure message naming the file and the replay command.
std::string save_case_for_replay(const harness::CaseFile& c, const std::string& stem);

}  // namespace hy4::test

// First statement of every test that runs kernels: skips visibly with the reason when
// the backend has no device, fails instead when a device was required.
#define HY4_REQUIRE_DEVICE()                                                                   \
  do {                                                                                         \
    if (!::hy4::test::device_present()) {                                                      \
      if (::hy4::test::device_required())                                                      \
        FAIL() << "HY4_REQUIRE_GPU is set but " << ::hy4::test::device_absence_reason();       \
      GTEST_SKIP() << "no " << ::hy4::rt::backend_name()                                       \
                   << " device: " << ::hy4::test::device_absence_reason();                     \
    }                                                                                          \
  } while (0)
