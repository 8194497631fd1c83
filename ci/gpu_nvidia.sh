#!/usr/bin/env bash
# ci/gpu_nvidia.sh: the suite on an NVIDIA GPU runner (the `cuda` preset).
#   ci/gpu_nvidia.sh [BUILD_DIR]     (default build/cuda; built with `cmake --preset cuda`)
# 1. ctest with HY4_REQUIRE_GPU=1 (a missing GPU fails, it does not skip)
# 2. compute-sanitizer memcheck, racecheck, initcheck on every op's tests
# 3. the conformance run, the benchmark (beside peers.py when HY4_PEERS names it), and the
#    eager-PyTorch comparison (if torch is there); with HY4_VARIANTS=out/v.tar.xz also the
#    benchmark's one-change variants (ci/bench_variants.py --run)
# Results also go to $OUT (or ./gpu-results) as logs.  HY4_SKIP_DEVICE_BITS: see below.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/cuda}
out=${OUT:-$root/gpu-results}
mkdir -p "$out"
export HY4_REQUIRE_GPU=1 HY4_CASE_DIR="$out/failed-cases"
# A build tree copied from another machine names its source by absolute path: link it.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$src" ] && [ "$src" != "$root" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no NVIDIA GPU"; exit 1; }
status=0
step() { echo; echo "=== $1"; shift; "$@" || { echo "FAILED: $*"; status=1; }; }
# every GPU at once: CTest assigns each GPU test a device from the resource spec
ngpu=$(nvidia-smi -L | wc -l)
python3 "$root/ci/resource_spec.py" -o "$out/resources.json"
step "ctest (cuda, GPU required, $ngpu GPUs)" ctest --test-dir "$build" --output-on-failure -LE exhaustive \
  --resource-spec-file "$out/resources.json" -j "$ngpu"
# HY4_SKIP_DEVICE_BITS=<why> skips the 4-minute exhaustive run, visibly (for a short device
# lease when kernels/platform/hy4_numeric.h is unchanged since a run that passed it).
if [ -n "${HY4_SKIP_DEVICE_BITS:-}" ]; then
  echo; echo "=== exhaustive: device bits == host bits: SKIPPED ($HY4_SKIP_DEVICE_BITS)"
else
  step "exhaustive: device bits == host bits, all 2^32 inputs" ctest --test-dir "$build" --output-on-failure -R device_bits -V
fi
if command -v compute-sanitizer >/dev/null; then
  for op_bin in "$build"/properties/*_properties; do
    for tool in memcheck racecheck initcheck; do
      step "compute-sanitizer $tool $(basename "$op_bin")" env RC_PARAMS="max_success=15" \
        compute-sanitizer --tool "$tool" --error-exitcode 9 "$op_bin" --gtest_filter=-*ProductionShape*:*EveryWidth*:*EveryK*:*HyV4*:*GridCap*:*Split*
    done
  done
else
  echo "compute-sanitizer not found: sanitizer runs SKIPPED"; status=1
fi
step "conformance" "$build/tools/hy4-conformance" --require-gpu
if [ -n "${HY4_PEERS:-}" ] && [ -f "$HY4_PEERS" ]; then
  # the speed yardstick in the same run: peers.py runs hy4-bench (graph of 100 launches,
  # 10 replays) and then eager PyTorch, torch.compile and Triton peers, with ratios
  # peers.py is the steering repository's yardstick, not ours: when one of its peers
  # cannot run (its routing peer fails to capture on some machines) it stops in its
  # ratio table; that is reported, and does not fail the suite's run.
  echo; echo "=== hy4-bench beside peers.py"
  python3 "$HY4_PEERS" --hy4-bench "$build/bench/hy4-bench" --out "$out/peers.json" ||
    echo "WARNING: peers.py exited $? (see above); hy4-bench's rows and the peers printed before it are complete"
else
  step "benchmark" "$build/bench/hy4-bench" --json "$out/bench.json"
fi
if [ -n "${HY4_VARIANTS:-}" ]; then
  # one-change variants built on the build machine (ci/bench_variants.py --build ... --pack)
  step "hy4-bench variants beside their base (ci/variants.txt)" python3 "$root/ci/bench_variants.py" \
    --run "$HY4_VARIANTS" --rounds "${HY4_VARIANT_ROUNDS:-2}" --json "$out/variants.json"
fi
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  step "gate vs eager PyTorch" python3 "$root/ci/torch_gate_compare.py" "$build" 8192 2048 7
else
  echo "torch with CUDA not found: the eager-PyTorch comparison was SKIPPED"
fi
skipped=${HY4_SKIP_DEVICE_BITS:+ (device_bits skipped)}
echo; [ $status -eq 0 ] && echo "GPU RUN PASS$skipped" || echo "GPU RUN FAIL$skipped"
exit $status
