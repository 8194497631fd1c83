#!/usr/bin/env bash
# ci/resource_selftest.sh PROBE PROPERTIES_BIN WORKDIR: the CTest resource machinery on
# the CPU backend with fake GPU slots.  Builds a scratch CTest project of 12 tests that
# each ask for one slot (RESOURCE_GROUPS gpus:1), runs it with 3 fake slots at -j 12,
# and checks: every test ran on a slot CTest assigned, no two tests held one slot at
# once (hy4-slot-probe's locks), all 3 slots were used, the real test main reports
# its assignment, and a test that asks for a slot under a spec with none fails.
set -euo pipefail
probe=$1; props=$2; work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/src" "$work/locks"
python3 "$here/resource_spec.py" --fake 3 -o "$work/spec.json"
cat > "$work/src/CMakeLists.txt" <<CML
cmake_minimum_required(VERSION 3.22)
project(hy4_resource_selftest NONE)
enable_testing()
foreach(i RANGE 1 11)
  add_test(NAME probe.\${i} COMMAND "$probe" probe.\${i})
  set_tests_properties(probe.\${i} PROPERTIES RESOURCE_GROUPS "gpus:1"
    ENVIRONMENT "HY4_SLOT_LOCK_DIR=$work/locks;HY4_SLOT_LOG=$work/slots.log")
endforeach()
add_test(NAME suite_main COMMAND "$props" --gtest_filter=GateExact.*)
set_tests_properties(suite_main PROPERTIES RESOURCE_GROUPS "gpus:1" PASS_REGULAR_EXPRESSION "fake gpus slot [0-2]")
CML
cmake -G Ninja -S "$work/src" -B "$work/build" >/dev/null   # the project's generator (minbase Debian has no make)
ctest --test-dir "$work/build" --resource-spec-file "$work/spec.json" -j 12 --output-on-failure
n=$(wc -l < "$work/slots.log")
[ "$n" -eq 11 ] || { echo "expected 11 probe runs, got $n"; exit 1; }
used=$(awk '{print $2}' "$work/slots.log" | sort -u | tr '\n' ' ')
echo "slots used: $used"
[ "$(awk '{print $2}' "$work/slots.log" | sort -u | wc -l)" -eq 3 ] || { echo "not every fake slot was used"; exit 1; }
awk '$2 !~ /^[0-2]$/ { print "probe on unknown slot: " $0; bad = 1 } END { exit bad }' "$work/slots.log"
# A test that asked for a GPU and got none fails: an assignment naming a missing type.
if env CTEST_RESOURCE_GROUP_COUNT=1 CTEST_RESOURCE_GROUP_0=gpus "$probe" lonely 2>/dev/null; then
  echo "a probe without an assigned slot passed"; exit 1
fi
echo "resource self-test: PASS"
