#!/bin/sh
# Every test that needs no GPU: installs what is needed, checks the formatting of every C++ and
# CUDA source (tools/check-format.sh), then builds and tests with the `ci`
# workflow preset (CUDA code compiled and linked for sm_86, GPU tests skipping themselves)
# when nvcc is present, else the `cpu` one; then the driver's tests and those of the parsers of
# outside input under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (workflow
# `asan-cuda`, or `asan-cpu` without nvcc: only those targets are built); then the fuzz preset
# (corpus replay and a bounded fuzzing run). The sanitized build runs beside the main tests, the
# fuzz build beside the sanitized tests.
set -eu
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
sh tools/check-format.sh
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  main=ci sanitized=asan-cuda sanitized_configure=asan-cuda
else
  echo "nvcc not found: building the CPU backend only (CUDA code not compiled)"
  main=cpu sanitized=asan-cpu sanitized_configure=asan
fi
# The same steps as `cmake --workflow --preset $main`, then `$sanitized`, then `fuzz`, except that
# each next tree is configured and built beside the tests before it, at the lowest CPU priority:
# those tests spend much of their time in the driver fixture's timed sleeps, and a build at nice
# 19 takes only the cores they leave idle. Its output goes to build/<configure preset>-build.log,
# shown when it fails.
# tests_beside_build TEST_PRESET CONFIGURE_PRESET BUILD_PRESET: runs the one beside the other and
# fails on either, the build's failure first.
tests_beside_build() {
  log="build/$2-build.log"
  ( nice -n 19 cmake --preset "$2" && nice -n 19 cmake --build --preset "$3" ) >"$log" 2>&1 &
  build_pid=$!
  tests_status=0
  ctest --preset "$1" || tests_status=$?
  build_status=0
  wait "$build_pid" || build_status=$?
  if [ "$build_status" -ne 0 ]; then
    tail -n 60 "$log"
    echo "the $3 build failed (exit $build_status): $log"
    exit 1
  fi
  [ "$tests_status" -eq 0 ] || { echo "the $1 tests failed (exit $tests_status)"; exit "$tests_status"; }
}
cmake --preset "$main"
cmake --build --preset "$main"
mkdir -p build
tests_beside_build "$main" "$sanitized_configure" "$sanitized"
tests_beside_build "$sanitized" fuzz fuzz
ctest --preset fuzz
# Every test preset run here wrote its JUnit where CMakePresets.json says (<build>/junit/<test
# preset>.xml), as a CI pipeline publishing them expects.
for junit in "build/$main/junit/$main.xml" "build/$sanitized_configure/junit/$sanitized.xml" build/fuzz/junit/fuzz.xml; do
  [ -s "$junit" ] || { echo "no JUnit file at $junit after its test preset ran"; exit 1; }
  echo "JUnit: $junit"
done
