// suite_selftest: three gtest tests, run one at a time by the ctest suite.exit_status
// (properties/CMakeLists.txt), which checks what suite_main.cpp turns each run into:
// passed -> 0, every selected test skipped -> 77 (ctest: SKIPPED), a failure -> 1, a
// filter that selects nothing -> 1.  Fails only fails when HY4_SUITE_SELFTEST_FAIL=1, so
// a run of the whole binary passes.
#include <gtest/gtest.h>

#include <cstdlib>

TEST(SuiteSelfTest, Passes) { SUCCEED(); }
TEST(SuiteSelfTest, Skips) { GTEST_SKIP() << "a skip, on purpose"; }
TEST(SuiteSelfTest, Fails) {
  if (std::getenv("HY4_SUITE_SELFTEST_FAIL")) ADD_FAILURE() << "a failure, on purpose";
}
