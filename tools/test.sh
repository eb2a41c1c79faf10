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
# The same steps as `cmake --workflow --preset $main` and then `$sanitized`, except that the
# sanitized build runs beside the main tests at the lowest CPU priority: those tests spend much of
# their time in the driver fixture's timed sleeps, and a build at nice 19 takes only the cores
# they leave idle. Its output goes to build/sanitized-build.log, shown when it fails.
cmake --preset "$main"
cmake --build --preset "$main"
mkdir -p build
( nice -n 19 cmake --preset "$sanitized_configure" && nice -n 19 cmake --build --preset "$sanitized" ) \
  >build/sanitized-build.log 2>&1 &
sanitized_build=$!
main_tests=0
ctest --preset "$main" || main_tests=$?
sanitized_status=0
wait "$sanitized_build" || sanitized_status=$?
if [ "$sanitized_status" -ne 0 ]; then
  tail -n 60 build/sanitized-build.log
  echo "the $sanitized build failed (exit $sanitized_status): build/sanitized-build.log"
  exit 1
fi
[ "$main_tests" -eq 0 ] || { echo "the $main tests failed (exit $main_tests)"; exit "$main_tests"; }
# The fuzz workflow's configure and build run beside the sanitized tests in the same way.
( nice -n 19 cmake --preset fuzz && nice -n 19 cmake --build --preset fuzz ) >build/fuzz-build.log 2>&1 &
fuzz_build=$!
sanitized_tests=0
ctest --preset "$sanitized" || sanitized_tests=$?
fuzz_status=0
wait "$fuzz_build" || fuzz_status=$?
if [ "$fuzz_status" -ne 0 ]; then
  tail -n 60 build/fuzz-build.log
  echo "the fuzz build failed (exit $fuzz_status): build/fuzz-build.log"
  exit 1
fi
[ "$sanitized_tests" -eq 0 ] || { echo "the $sanitized tests failed (exit $sanitized_tests)"; exit "$sanitized_tests"; }
ctest --preset fuzz
# Every test preset run here wrote its JUnit where CMakePresets.json says (<build>/junit/<test
# preset>.xml), as a CI pipeline publishing them expects.
for junit in "build/$main/junit/$main.xml" "build/$sanitized_configure/junit/$sanitized.xml" build/fuzz/junit/fuzz.xml; do
  [ -s "$junit" ] || { echo "no JUnit file at $junit after its test preset ran"; exit 1; }
  echo "JUnit: $junit"
done
