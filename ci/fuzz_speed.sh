#!/usr/bin/env bash
# ci/fuzz_speed.sh [BUILD_DIR]: executions per second of each fuzzer on its smallest
# inputs (fuzz/corpus/<op>/small_t1_{eager,graph}.bin: T = 1, small E / W / D), one
# core, ASan + UBSan as the campaign runs them: the process start is measured apart
# (a 1-run invocation) and taken out.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
fz=${1:-$root/build/cpu}/fuzz
for f in "$root"/fuzz/corpus/*/small_t1_*.bin; do
  op=$(basename "$(dirname "$f")")
  n=2001
  s=$(date +%s.%N); taskset -c 0 "$fz/${op}_fuzzer" -runs=1 "$f" >/dev/null 2>&1
  m=$(date +%s.%N); taskset -c 0 "$fz/${op}_fuzzer" -runs=$n "$f" >/dev/null 2>&1 || echo "$op: FAILED on $f"
  e=$(date +%s.%N)
  HY4_FUZZ_ECHO=1 "$fz/${op}_fuzzer" -runs=1 "$f" 2>&1 | grep -m1 'fuzz case' | cut -c1-120 | sed 's/^fuzz case: //' > /tmp/hy4-speed.$$
  python3 -c "import sys; n=$n; t=($e-$m)-($m-$s); print(f'{sys.argv[1]:28s} {round((n-1)/t):7d} exec/s   {sys.argv[2]}')" \
    "$op/$(basename "$f")" "$(cat /tmp/hy4-speed.$$)"
done
rm -f /tmp/hy4-speed.$$
