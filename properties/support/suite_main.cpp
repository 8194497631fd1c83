// The main of every property-test binary: names the backend, device and warp size,
// and refuses to pass when a GPU was required and none is present.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "suite.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string assigned;
  try {
    assigned = hy4::test::select_assigned_device();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[hy4] FAILED: %s\n", e.what());
    return 1;
  }
  if (!assigned.empty()) std::printf("[hy4] %s\n", assigned.c_str());
  if (hy4::test::device_present()) {
    if (assigned.empty()) hy4::rt::set_device(0);
    std::printf("[hy4] backend %s, device %s\n", hy4::rt::backend_name(), hy4::rt::device_name().c_str());
  } else {
    std::printf("[hy4] backend %s, NO DEVICE: %s\n", hy4::rt::backend_name(),
                hy4::test::device_absence_reason().c_str());
    if (hy4::test::device_required()) {
      std::fprintf(stderr, "[hy4] HY4_REQUIRE_GPU is set and no device is present: failing\n");
      return 1;
    }
  }
  return RUN_ALL_TESTS();
}
