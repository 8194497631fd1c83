#!/usr/bin/env bash
# ci/fuzz_campaign.sh: a nightly fuzz campaign, one job per GPU.
#   ci/fuzz_campaign.sh [-t SECONDS] [-g GPU_BUILD_DIR] [op ...]
# For each GPU of the runner (ci/resource_spec.py; without GPUs: one job per 2 cores),
# job i runs every op's libFuzzer target (cpu preset, ASan + UBSan on the CPU executor)
# for SECONDS, with its own corpus under fuzz-campaign/<op>/job<i>, then replays every
# case file the job produced, and its seed corpus's regression cases, on GPU i with
# the GPU build's hy4-repro (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES = i): a case
# found on the CPU must also hold on the device.  Exit 1 if any job found a failure.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
secs=600; gpu_build=""
while getopts "t:g:" o; do case $o in t) secs=$OPTARG ;; g) gpu_build=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
ops=("$@"); [ ${#ops[@]} -gt 0 ] || ops=(gate sink topk routing)
cpu=$root/build/cpu
[ -x "$cpu/fuzz/${ops[0]}_fuzzer" ] || { echo "build the cpu preset first (cmake --preset cpu && cmake --build build/cpu)"; exit 2; }
gpus=$(python3 "$root/ci/resource_spec.py" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin)["local"][0]; print(sum(len(v) for v in d.values()))' 2>/dev/null || echo 0)
jobs=$gpus; [ "$jobs" -gt 0 ] || jobs=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
echo "fuzz campaign: ${#ops[@]} ops x $jobs jobs (GPUs: $gpus), $secs s each"
out=$root/fuzz-campaign
status=0
run_job() {
  local i=$1
  for op in "${ops[@]}"; do
    local dir=$out/$op/job$i
    mkdir -p "$dir/corpus" "$dir/cases"
    HY4_CASE_DIR=$dir/cases "$cpu/fuzz/${op}_fuzzer" -dict="$root/fuzz/dict/$op.dict" -max_total_time="$secs" \
      -artifact_prefix="$dir/" -print_final_stats=1 "$dir/corpus" "$root/fuzz/corpus/$op" >"$dir/fuzz.log" 2>&1 ||
      echo "job $i: $op fuzzer stopped with a failure (see $dir/fuzz.log)"
    if [ -n "$gpu_build" ] && [ "$gpus" -gt 0 ]; then
      local cases=("$dir"/cases/*.case "$root"/regressions/cases/${op}_*.case)
      CUDA_VISIBLE_DEVICES=$i HIP_VISIBLE_DEVICES=$i HY4_REQUIRE_GPU=1 \
        "$gpu_build/regressions/hy4-repro" --require-gpu "${cases[@]}" >"$dir/gpu-replay.log" 2>&1 ||
        echo "job $i: $op cases fail on GPU $i (see $dir/gpu-replay.log)"
    fi
  done
}
pids=()
for ((i = 0; i < jobs; i++)); do run_job "$i" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
found=$(find "$out" -name '*.case' -newer "$0" 2>/dev/null | wc -l)
echo "fuzz campaign done: $found case files under $out (replay: hy4-repro FILE)"
grep -l "FAIL" "$out"/*/job*/fuzz.log "$out"/*/job*/gpu-replay.log 2>/dev/null && status=1
exit $status
