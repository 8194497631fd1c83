#!/usr/bin/env bash
# ci/gpu_amd.sh: the suite on an AMD GPU runner (MI300X gfx942 / MI350X-MI355X gfx950).
#   ci/gpu_amd.sh [BUILD_DIR]       (default build/rocm; `cmake --preset rocm` with ROCm)
# NOT RUN YET: no AMD GPU was available to this project; it mirrors ci/gpu_nvidia.sh.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/rocm}
out=${OUT:-$root/gpu-results}
mkdir -p "$out"
export HY4_REQUIRE_GPU=1 HY4_CASE_DIR="$out/failed-cases"
command -v rocminfo >/dev/null && rocminfo | grep -m4 'gfx9' || { echo "no AMD GPU (rocminfo)"; exit 1; }
status=0
step() { echo; echo "=== $1"; shift; "$@" || { echo "FAILED: $*"; status=1; }; }
step "code objects use no scratch" bash "$root/ci/check_amd_code_objects.sh" "$build"
ngpu=$(python3 "$root/ci/resource_spec.py" -o "$out/resources.json" 2>&1 | grep -c ' id ')
step "ctest (rocm, GPU required, $ngpu GPUs)" ctest --test-dir "$build" --output-on-failure -LE exhaustive \
  --resource-spec-file "$out/resources.json" -j "$ngpu"
step "exhaustive: device bits == host bits" ctest --test-dir "$build" --output-on-failure -R device_bits
step "conformance" "$build/tools/hy4-conformance" --require-gpu
step "benchmark (floor: the copy bandwidth measured in the run)" "$build/bench/hy4-bench" --json "$out/bench.json"
echo; [ $status -eq 0 ] && echo "GPU RUN PASS" || echo "GPU RUN FAIL"
exit $status
