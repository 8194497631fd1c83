// suite.h: what every op's property tests share: backend gating (no silent passes),
// the seed list, warp-size switching on the CPU backend, failure case files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "device_buffer.h"
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

// Runs the case eagerly at warp 32 and at warp 64 (the caller has checked both are
// runnable, HY4_REQUIRE_BOTH_WARP_SIZES) and tells whether the outputs are identical.
template <class Case, class Run>
bool same_bits_at_warp_32_and_64(const Case& c, Run run) {
  harness::ScopedStream s;
  use_warp_size(32);
  const auto w32 = run(c, s.get());
  use_warp_size(64);
  const auto w64 = run(c, s.get());
  return w32 == w64;
}

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

// After HY4_REQUIRE_DEVICE in a wave32 == wave64 test: skips visibly on a backend that
// runs one warp size (a GPU), where the device is held to the same bit model instead.
#define HY4_REQUIRE_BOTH_WARP_SIZES()                                                            \
  do {                                                                                           \
    if (::hy4::test::runnable_warp_sizes().size() < 2)                                           \
      GTEST_SKIP() << "this backend runs one warp size (" << ::hy4::rt::warp_size()              \
                   << "); wave32 == wave64 is proven on the CPU backend, and this device is "  \
                      "held to the same bit model";                                              \
  } while (0)
