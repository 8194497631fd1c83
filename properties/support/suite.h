// suite.h: what every op's property tests share: backend gating (no silent passes),
// the seed list, warp-size switching on the CPU backend, failure case files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case_file.h"
#include "platform/runtime.h"

namespace hy4::test {

// The fixed seeds of the example-based tests and the conformance run: one place.
const std::vector<uint64_t>& seed_list();

// True when the build's backend has a device.  When not, the reason.
bool device_present();
std::string device_absence_reason();
// HY4_REQUIRE_GPU=1 (set by the GPU runner scripts and the GPU ctest variants):
// a missing device is a failure, not a skip.
bool device_required();

// Warp sizes this process can run kernels at: {32, 64} on the CPU backend, the
// device's own on a GPU.
std::vector<int> runnable_warp_sizes();
// Selects the warp size kernels run at (throws if the backend cannot).
void use_warp_size(int w);

// CTest resource allocation (ctest --resource-spec-file F -j N): when CTest assigned
// this test a GPU (CTEST_RESOURCE_GROUP_COUNT and CTEST_RESOURCE_GROUP_0_<TYPE>), selects
// that device and returns a line saying so; "" when CTest assigned nothing.  Throws a
// std::runtime_error when an assignment exists but cannot be honoured (no device, an
// id past the device count): a test that asked for a GPU and got none fails.
// On the CPU backend the ids are fake slots, recorded but not selected.
std::string select_assigned_device();
// The raw assignment: false when CTest assigned nothing; throws when it is malformed.
bool ctest_assignment(std::string* type, std::string* id);

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
