#!/usr/bin/env bash
# ci/ncu_probe.sh: where one hy4-bench launch's warps wait (ncu warp-state sampling), on an
# NVIDIA GPU machine.  Diagnosis only: speed claims come from hy4-bench (README, Performance).
#   ci/ncu_probe.sh BUILD_DIR OUT_DIR NAME:OP:T:KERNEL_REGEX [...]
#   e.g. ci/ncu_probe.sh build/cuda $OUT/ncu topk_t1:topk:1:topk_row_block gate_t512:gate:512:gate_kernel
# For each spec: the 31st launch of the kernel matching KERNEL_REGEX inside hy4-bench's graph
# replays (--ops OP --tokens T; warm caches, ncu's cache flush and clock lock off), profiled
# with --set full, written to OUT_DIR/NAME.ncu-rep (gzip), its details page (NAME.details.csv)
# and its SASS source page (NAME.source.csv); the source page is summarised by
# ci/ncu_stalls.py into NAME.stalls.txt (stall reasons per instruction, running totals).
set -u
[ $# -ge 3 ] || { sed -n 2,10p "$0"; exit 2; }
build=$1 out=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
command -v ncu >/dev/null || { echo "ncu_probe: ncu not found"; exit 1; }
[ -x "$build/bench/hy4-bench" ] || { echo "ncu_probe: $build/bench/hy4-bench not built"; exit 1; }
mkdir -p "$out"
status=0
for spec in "$@"; do
  IFS=: read -r name op tokens kernel <<<"$spec"
  if [ -z "$name" ] || [ -z "$op" ] || [ -z "$tokens" ] || [ -z "$kernel" ]; then
    echo "ncu_probe: bad spec '$spec' (NAME:OP:T:KERNEL_REGEX)"; status=2; continue
  fi
  ncu --set full --import-source no --cache-control none --clock-control none \
      --warp-sampling-interval 0 -k "regex:$kernel" --launch-skip 30 --launch-count 1 -f \
      -o "$out/$name" "$build/bench/hy4-bench" --ops "$op" --tokens "$tokens" --launches 20 --replays 3 \
      > "$out/$name.run.log" 2>&1 || { echo "ncu_probe: $name: ncu failed (see $name.run.log)"; status=1; continue; }
  ncu -i "$out/$name.ncu-rep" --page details --csv > "$out/$name.details.csv" 2>&1
  ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name.source.csv" 2>&1
  python3 "$root/ci/ncu_stalls.py" "$out/$name.source.csv" > "$out/$name.stalls.txt" 2>&1 || status=1
  gzip -f "$out/$name.ncu-rep"
  echo "== $name ($op, T = $tokens, kernel ~ $kernel)"; head -2 "$out/$name.stalls.txt"
done
exit $status
