#!/usr/bin/env bash
# ci/setup.sh: installs what the project needs on Debian 12 (Debian's registry only).
# clang-22 + lld + compiler-rt (HIP for gfx942/gfx950, libFuzzer, ASan/UBSan),
# clang-tools-22 (clang-offload-bundler: the HIP driver calls it for every AMD compile),
# llvm-22 (llvm-cov / llvm-profdata for ci/coverage.sh), Debian's HIP 5.2 and ROCm device
# libs, rapidcheck, Eigen, GoogleTest, CMake, Ninja (every CMake call in ci/ uses -G Ninja
# or a preset, so make is not needed), git and ca-certificates (a minimal root has neither),
# python3-yaml (ci/check_workflows.py, the ci.workflows test).
# nvcc is not a Debian package: the cuda preset is built only where /usr/local/cuda is.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(cmake ninja-build g++ python3 python3-yaml git ca-certificates clang-22 lld-22 libclang-rt-22-dev clang-tools-22 llvm-22
      libamdhip64-dev rocm-device-libs librapidcheck-dev libeigen3-dev libgtest-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci/setup.sh: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "ci/setup.sh: all packages present"
fi
