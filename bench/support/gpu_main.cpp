// The main of GPU benchmark suites: skips with 77 without a usable GPU (fails under
// DIT_REQUIRE_GPU=1) and adds the device's context to the JSON.
#include "bench/support/gpu_support.h"

int main(int argc, char** argv) { return dit::bench::run_main(argc, argv, dit::bench::probe_gpu); }
