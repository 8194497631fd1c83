#!/usr/bin/env bash
# ci/test.sh: the tests (README's second command; .ci/run calls it).
#  - cpu preset: build, then every ctest label (ops, graph, executor, regression,
#    fuzz-smoke, exhaustive, conformance) at warp 32 and 64;
#  - rocm preset: build the gfx942/gfx950 code objects, check they use no scratch,
#    run its ctest (no AMD GPU here: its GPU tests report SKIPPED, visibly);
#  - cuda preset (where /usr/local/cuda exists): build, run its ctest (skips here).
# The last line totals every ctest run (and every build or check step, counted as one
# test each): `N passed, N failed, N skipped`.  The GPU trees' tests count as skipped
# where there is no GPU, so the closing line is the real count.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${HY4_JOBS:-$(nproc)}
logs=$(mktemp -d)
passed=0 failed=0 skipped=0

# step NAME CMD...: a build or check step; counts as one passed or failed test.
step() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "ci/test.sh: step '$name' FAILED"; failed=$((failed + 1)); fi
}
# run_ctest NAME ARGS...: runs ctest, adds its counts (ctest counts skipped tests as
# passed in its summary line; they are taken out here).
run_ctest() {
  local name=$1; shift
  local log="$logs/$name.log"
  ctest "$@" 2>&1 | tee "$log"
  local total fail skip
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fail=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  skip=$(grep -c '(Skipped)$' "$log" || true)
  if [ -z "$total" ]; then
    echo "ci/test.sh: ctest '$name' printed no summary"; failed=$((failed + 1)); return
  fi
  passed=$((passed + total - fail - skip)); failed=$((failed + fail)); skipped=$((skipped + skip))
}

echo "=== cpu preset"
if step "cpu configure" cmake --preset cpu >/dev/null && step "cpu build" cmake --build build/cpu -j "$jobs"; then
  run_ctest cpu --test-dir build/cpu -j "$jobs" --output-on-failure
fi

echo "=== rocm preset (compiled and inspected; no AMD GPU exists here)"
if step "rocm configure" cmake --preset rocm >/dev/null && step "rocm build" cmake --build build/rocm -j "$jobs"; then
  step "AMD code objects (registers, no scratch)" bash ci/check_amd_code_objects.sh build/rocm
  run_ctest rocm --test-dir build/rocm -LE exhaustive --output-on-failure
fi

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "=== cuda preset (built here; run on an NVIDIA GPU with ci/gpu_nvidia.sh)"
  if step "cuda configure" cmake --preset cuda >/dev/null && step "cuda build" cmake --build build/cuda -j "$jobs"; then
    run_ctest cuda --test-dir build/cuda -LE exhaustive --output-on-failure
  fi
else
  echo "=== cuda preset SKIPPED: no nvcc at /usr/local/cuda"
  skipped=$((skipped + 1))
fi
rm -rf "$logs"
[ $failed -eq 0 ] && echo "ci/test.sh: PASS" || echo "ci/test.sh: FAIL"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
