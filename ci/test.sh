#!/usr/bin/env bash
# ci/test.sh: the tests (README's second command; .ci/run calls it).
#  - cpu preset: build, then every ctest label (ops, graph, executor, regression,
#    fuzz-smoke, exhaustive, conformance) at warp 32 and 64;
#  - rocm preset: build the gfx942/gfx950 code objects, check they use no scratch,
#    run its ctest (no AMD GPU here: its GPU tests report SKIPPED, visibly);
#  - cuda preset (where /usr/local/cuda exists): build, run its ctest (skips here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${HY4_JOBS:-$(nproc)}
status=0

echo "=== cpu preset"
cmake --preset cpu >/dev/null
cmake --build build/cpu -j "$jobs"
ctest --test-dir build/cpu -j "$jobs" --output-on-failure || status=1

echo "=== rocm preset (compiled and inspected; no AMD GPU exists here)"
cmake --preset rocm >/dev/null
cmake --build build/rocm -j "$jobs"
bash ci/check_amd_code_objects.sh build/rocm || status=1
ctest --test-dir build/rocm -LE exhaustive --output-on-failure || status=1

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "=== cuda preset (built here; run on an NVIDIA GPU with ci/gpu_nvidia.sh)"
  cmake --preset cuda >/dev/null
  cmake --build build/cuda -j "$jobs"
  ctest --test-dir build/cuda -LE exhaustive --output-on-failure || status=1
else
  echo "=== cuda preset SKIPPED: no nvcc at /usr/local/cuda"
fi
[ $status -eq 0 ] && echo "ci/test.sh: PASS" || echo "ci/test.sh: FAIL"
exit $status
