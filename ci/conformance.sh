#!/usr/bin/env bash
# ci/conformance.sh: the project's main job.  Picks the best backend present
# (an NVIDIA GPU with nvcc -> cuda, an AMD GPU -> rocm, else the CPU executor), builds
# that preset and runs hy4-conformance on it.  On a GPU backend a missing device fails.
#   ci/conformance.sh [cpu|cuda|rocm]     (force a backend)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
backend=${1:-}
if [ -z "$backend" ]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    backend=cuda
  elif [ -e /dev/kfd ] && command -v rocminfo >/dev/null && rocminfo 2>/dev/null | grep -q 'gfx9[45]'; then
    backend=rocm
  else
    backend=cpu
  fi
fi
echo "ci/conformance.sh: backend $backend"
cmake --preset "$backend" >/dev/null
cmake --build "build/$backend" --target hy4-conformance
args=()
[ "$backend" = cpu ] || args+=(--require-gpu)
for w in ${HY4_CONFORMANCE_WARPS:-32 64}; do
  HY4_CPU_WARP_SIZE=$w "build/$backend/tools/hy4-conformance" "${args[@]}"
  [ "$backend" = cpu ] || break
done
