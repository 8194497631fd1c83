#!/usr/bin/env bash
# ci/check_amd_code_objects.sh BUILD_DIR: the AMD budget of every kernel instance for
# every target, read from the compiled code objects (tools/hy4_amd_budget.py --check):
# fails on scratch, VGPR spills, or occupancy below a kernel's stated design need.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/tools/hy4_amd_budget.py" --build "${1:-$root/build/rocm}" --check
