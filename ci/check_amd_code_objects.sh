#!/usr/bin/env bash
# ci/check_amd_code_objects.sh BUILD_DIR: prints each kernel's registers and scratch
# for every AMD target from the device assembly the rocm preset writes (BUILD_DIR/asm)
# and fails if a kernel uses scratch (private segment > 0: spills or stack).
set -euo pipefail
dir=${1:-build/rocm}/asm
shopt -s nullglob
files=("$dir"/*.s)
[ ${#files[@]} -gt 0 ] || { echo "no device assembly in $dir"; exit 1; }
bad=0
printf "%-34s %6s %6s %8s\n" "kernel-target" "vgpr" "sgpr" "scratch"
for f in "${files[@]}"; do
  awk -v file="$(basename "$f" .s)" '
    /^[ \t]+\.name:[ \t]+_Z/ { name=$2; tmpl=""; if (match(name, /ILi[0-9]+E/)) tmpl="<" substr(name, RSTART+3, RLENGTH-4) ">" }
    /^[ \t]+\.private_segment_fixed_size:/ { scratch=$2 }
    /^[ \t]+\.sgpr_count:/ { sgpr=$2 }
    /^[ \t]+\.vgpr_count:/ { vgpr=$2; printf "%-34s %6s %6s %8s\n", file tmpl, vgpr, sgpr, scratch; if (scratch+0 > 0) exit 1 }
  ' "$f" || { echo "SCRATCH USED in $f"; bad=1; }
done
exit $bad
