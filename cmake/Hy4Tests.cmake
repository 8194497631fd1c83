# GPU tests ask CTest for one GPU: with `ctest --resource-spec-file F -j N` (see
# ci/resource_spec.py) CTest runs them on every GPU at once, each on the one it assigns
# (CTEST_RESOURCE_GROUP_*; the test mains select it).  Without a spec file it is ignored.
set(HY4_GPU_RESOURCE "gpus" CACHE STRING "CTest resource type GPU tests ask for (gpus, or a gfx target)")
function(hy4_gpu_resources test variant)
  if(variant STREQUAL "cuda" OR variant STREQUAL "rocm")
    set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "${HY4_GPU_RESOURCE}:1")
  endif()
endfunction()

# hy4_add_test(NAME <name> COMMAND <target> [ARGS ...] LABELS ...)
# Adds one ctest per backend variant (cpu32 + cpu64 on the CPU backend, cuda, rocm):
# <name>.<variant>, labelled with the variant; a binary whose every selected test skipped
# exits 77 (properties/support/suite_main.cpp) and is reported as skipped.  (Not by the
# output "[  PASSED  ] 0 tests": a run whose every test failed prints that too.)
function(hy4_add_test)
  cmake_parse_arguments(T "" "NAME;COMMAND;TIMEOUT" "ARGS;LABELS" ${ARGN})
  foreach(v IN LISTS HY4_TEST_VARIANTS)
    set(env "HY4_CASE_DIR=${CMAKE_BINARY_DIR}/hy4-failed-cases")
    if(v STREQUAL "cpu32")
      list(APPEND env HY4_CPU_WARP_SIZE=32)
    elseif(v STREQUAL "cpu64")
      list(APPEND env HY4_CPU_WARP_SIZE=64)
    endif()
    add_test(NAME ${T_NAME}.${v} COMMAND ${T_COMMAND} ${T_ARGS})
    set_tests_properties(${T_NAME}.${v} PROPERTIES LABELS "${T_LABELS};${v}" ENVIRONMENT "${env}"
                         SKIP_RETURN_CODE 77)
    hy4_gpu_resources(${T_NAME}.${v} ${v})
    if(T_TIMEOUT)
      set_tests_properties(${T_NAME}.${v} PROPERTIES TIMEOUT ${T_TIMEOUT})
    endif()
  endforeach()
endfunction()
