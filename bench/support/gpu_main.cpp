// The main of GPU benchmark suites: skips with 77 without a usable GPU (fails under
// DIT_REQUIRE_GPU=1) and adds the device's context to the JSON; under CTest's resource allocation
// it sees only the GPU CTest gave it (core/ctest_gpu.h).
#include "bench/support/gpu_support.h"
#include "core/ctest_gpu.h"

int main(int argc, char** argv) {
  if (!dit::take_ctest_gpu(argv[0])) return 2;
  return dit::bench::run_main(argc, argv, dit::bench::probe_gpu);
}
