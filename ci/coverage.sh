#!/usr/bin/env bash
# ci/coverage.sh [BUILD_DIR]: line and branch coverage of kernels/ under the CPU suite.
# Builds the cpu preset with clang's source-based coverage (-fprofile-instr-generate
# -fcoverage-mapping) into BUILD_DIR (default build/coverage, fuzzers off), runs the
# suite's ctest (without the exhaustive and fuzz-smoke labels: the exhaustive accuracy
# sweep is host math, the fuzzers are their own instrumented build), merges the profiles
# with llvm-profdata-22 and prints, with llvm-cov-22, per-file line / branch coverage of
# kernels/*.hip and kernels/*_plan.cpp, then every kernel line no test executed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build/coverage}
jobs=${HY4_JOBS:-$(nproc)}
for tool in llvm-profdata-22 llvm-cov-22; do
  command -v $tool >/dev/null || { echo "ci/coverage.sh: $tool not found (bash ci/setup.sh installs llvm-22)"; exit 2; }
done
flags="-fprofile-instr-generate -fcoverage-mapping"
cmake --preset cpu -B "$build" -DHY4_FUZZ=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >/dev/null
cmake --build "$build" -j "$jobs"
rm -rf "$build/profiles" && mkdir -p "$build/profiles"
LLVM_PROFILE_FILE="$root/$build/profiles/%p-%m.profraw" \
  ctest --test-dir "$build" -j "$jobs" -LE "exhaustive|fuzz-smoke" --output-on-failure | tail -4
llvm-profdata-22 merge -sparse "$build"/profiles/*.profraw -o "$build/hy4.profdata"
objects=()
for b in "$build"/properties/*_properties "$build"/regressions/hy4-repro "$build"/tools/hy4-conformance; do
  [ -x "$b" ] && objects+=(-object "$b")
done
sources=(kernels/*.hip kernels/*_plan.cpp)
gen=()
for s in "${sources[@]}"; do gen+=("$root/$build/gen/$(basename "${s%.*}").cpu.cpp"); done
echo
echo "=== coverage of kernels/ (line and branch), the cpu suite at warp 32 and 64"
llvm-cov-22 report -instr-profile "$build/hy4.profdata" "${objects[@]:1}" -show-branch-summary \
  "${sources[@]/#/$root/}" | sed "s|$root/||"
echo
echo "=== kernel lines no test executed (file:line: source)"
llvm-cov-22 show -instr-profile "$build/hy4.profdata" "${objects[@]:1}" -format=text \
  "${sources[@]/#/$root/}" 2>/dev/null |
  awk -v root="$root/" '
    /^\/.*:$/ { file = substr($0, 1, length($0) - 1); sub(root, "", file); next }
    /^ *[0-9]+\| *0\|/ { split($0, a, "|"); ln = a[1]; gsub(/ /, "", ln); src = $0; sub(/^[^|]*\|[^|]*\|/, "", src); print file ":" ln ":" src }'
echo
echo "=== kernel branches taken one way only (file:line, the branch, its counts)"
llvm-cov-22 show -instr-profile "$build/hy4.profdata" "${objects[@]:1}" -format=text -show-branches=count \
  -show-instantiations=false "${sources[@]/#/$root/}" 2>/dev/null |
  awk -v root="$root/" '
    /^\/.*:$/ { file = substr($0, 1, length($0) - 1); sub(root, "", file); next }
    /^ *[0-9]+\|/ { split($0, a, "|"); ln = a[1]; gsub(/ /, "", ln); next }
    /Branch \(/ && (/True: 0,/ || /False: 0\]/) && !/True: 0, False: 0\]/ { b = $0; sub(/^[ |]*/, "", b); print file ":" ln ": " b }'
