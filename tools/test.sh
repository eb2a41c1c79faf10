#!/bin/sh
# Every test that needs no GPU: installs what is needed, checks the formatting of every C++ and
# CUDA source (tools/check-format.sh), then builds and tests with the `ci`
# workflow preset (CUDA code compiled and linked for sm_86, GPU tests skipping themselves)
# when nvcc is present, else the `cpu` one; then the driver's tests and those of the parsers of
# outside input under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (workflow
# `asan-cuda`, or `asan-cpu` without nvcc: only those targets are built); then the fuzz preset
# (corpus replay and a bounded fuzzing run).
set -eu
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
sh tools/check-format.sh
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  cmake --workflow --preset ci
  cmake --workflow --preset asan-cuda
else
  echo "nvcc not found: building the CPU backend only (CUDA code not compiled)"
  cmake --workflow --preset cpu
  cmake --workflow --preset asan-cpu
fi
cmake --workflow --preset fuzz
