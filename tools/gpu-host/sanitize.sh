#!/bin/bash
# The kernel tests under compute-sanitizer on the GPU host (the `sanitize` presets; the tests
# are registered in tests/kernels/CMakeLists.txt): configures build/sanitize (the a5500 build,
# sm_86, with -lineinfo so that reports name source lines), builds kernels_cuda_test, and runs
# `ctest --preset sanitize`: memcheck (device leaks included), racecheck, synccheck and
# initcheck, one test each over the small cases, each failing on any error or hazard.
# Writes into OUT_DIR (default $OUT, else ./gpu-host-out):
#   sanitize-configure.log, sanitize-build.log   the configure and build output
#   ctest-sanitize.log                          ctest's console output
#   ctest-sanitize.xml                          JUnit, each test's whole output included
#   sanitize-tests.log                          each tool's whole report (CTest's LastTest.log)
#   sanitize-stages.tsv                         seconds and exit status of each stage
# Usage, from the checkout root or by path, after stage-deps.sh filled .deps/:
#   tools/gpu-host/sanitize.sh [OUT_DIR]
# COMPUTE_SANITIZER=PATH names the tool when it is neither on PATH nor in /usr/local/cuda;
# SANITIZE_JOBS=N runs N tools at a time (default 4, or 1 when the GPU is in an exclusive
# compute mode, where a second process cannot open it).
# Exit status: 0 when all four pass, 1 when a test fails, 2 when the tool is missing or the
# configure or build step fails.
set -uo pipefail
out=$(realpath -m "${1:-${OUT:-$PWD/gpu-host-out}}")
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$out"
if [ -f .deps/env.sh ]; then
  # shellcheck source=/dev/null
  . .deps/env.sh
fi
export CCACHE_DISABLE=1

sanitizer="${COMPUTE_SANITIZER:-}"
if [ -z "$sanitizer" ]; then
  for candidate in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      sanitizer=$candidate
      break
    fi
  done
fi
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  echo "sanitize: compute-sanitizer not found; set COMPUTE_SANITIZER=PATH"
  exit 2
fi
echo "sanitize: $sanitizer, $("$sanitizer" --version | tail -1)"

jobs="${SANITIZE_JOBS:-}"
if [ -z "$jobs" ]; then
  jobs=4
  if nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | grep -qi exclusive; then
    jobs=1
  fi
fi

stages="$out/sanitize-stages.tsv"
printf 'stage\tseconds\texit\n' >"$stages"
started=$(date +%s)
record() {  # record STAGE START EXIT
  printf '%s\t%s\t%s\n' "$1" "$(($(date +%s) - $2))" "$3" >>"$stages"
  echo "stage $1: $(($(date +%s) - $2)) s (exit $3)"
}

start=$(date +%s)
cmake --preset sanitize "-DDIT_COMPUTE_SANITIZER=$sanitizer" >"$out/sanitize-configure.log" 2>&1
rc=$?
record configure "$start" $rc
if [ $rc -ne 0 ]; then
  tail -40 "$out/sanitize-configure.log"
  exit 2
fi

start=$(date +%s)
cmake --build --preset sanitize -j "$(nproc)" >"$out/sanitize-build.log" 2>&1
rc=$?
record build "$start" $rc
if [ $rc -ne 0 ]; then
  tail -60 "$out/sanitize-build.log"
  exit 2
fi

start=$(date +%s)
ctest --preset sanitize -j "$jobs" --output-junit "$out/ctest-sanitize.xml" \
  --test-output-size-passed 4000000 --test-output-size-failed 4000000 >"$out/ctest-sanitize.log" 2>&1
status=$?
record test "$start" $status
cp build/sanitize/Testing/Temporary/LastTest.log "$out/sanitize-tests.log" 2>/dev/null

# Per test: its name, each tool summary line, its time and its verdict.
grep -E '^[0-9]+/[0-9]+ Test: |SUMMARY: |^Test time|^Test (Passed|Failed)|Timeout' "$out/sanitize-tests.log" 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run|No tests' "$out/ctest-sanitize.log" | tail -10
echo "sanitize: $(($(date +%s) - started)) s in all, $jobs at a time, logs in $out"
[ $status -eq 0 ] || exit 1
exit 0
