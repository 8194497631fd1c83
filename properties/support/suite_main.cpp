// The main of every property-test binary: names the backend, device and warp size,
// and refuses to pass when a GPU was required and none is present.  Exit status: gtest's
// (0 passed, 1 a failure); 77 when every selected test skipped and none failed (ctest:
// SKIP_RETURN_CODE 77, cmake/Hy4Tests.cmake); 1 when the filter selected no test at all.
// (ctest once read "[  PASSED  ] 0 tests" as skipped, which a run whose every test
// FAILED prints too: numeric.exhaustive.device_bits, one test, failed as "Skipped".)
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
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (rc != 0 || ::testing::GTEST_FLAG(list_tests)) return rc;
  if (run.test_to_run_count() == 0) {
    std::fprintf(stderr, "[hy4] FAILED: --gtest_filter selected no test of this binary\n");
    return 1;
  }
  if (run.successful_test_count() == 0 && run.skipped_test_count() > 0) {
    std::printf("[hy4] every selected test skipped (%d): exit 77, SKIPPED for ctest\n", run.skipped_test_count());
    return 77;
  }
  return 0;
}
