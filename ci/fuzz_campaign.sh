#!/usr/bin/env bash
# ci/fuzz_campaign.sh: the nightly fuzz campaign on the CPU backend (ASan + UBSan,
# coverage-guided), with its findings replayed on a GPU build when one is given.
#   ci/fuzz_campaign.sh [-t SECONDS] [-j JOBS] [-o OUT] [-c CORPUS] [-b CPU_BUILD]
#                       [-g GPU_BUILD] [--stream N] [fuzzer ...]
# Every fuzzer in fork mode for its share of SECONDS (default 600 for all), corpus
# merged at the end, findings minimised into case files under OUT/findings/ that
# hy4-repro replays; OUT/summary.json and OUT/coverage.svg.  Details: ci/fuzz_campaign.py.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/ci/fuzz_campaign.py" "$@"
