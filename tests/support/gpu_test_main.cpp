// GoogleTest main for tests that need a GPU. Without a usable GPU it exits with 77 (CTest's
// SKIP_RETURN_CODE for `gpu` tests, so the skip is counted as a skip, not a pass), or fails
// when DIT_REQUIRE_GPU=1, as the GPU presets set. Listing tests works without a GPU. Under CTest's
// resource allocation it sees only the GPU CTest gave it (core/ctest_gpu.h). DIT_TEST_SHARDS runs
// its cases as several processes on that GPU (test_shards.h), once the GPU is known to be there.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/ctest_gpu.h"
#include "tests/support/test_shards.h"

int main(int argc, char** argv) {
  if (!dit::take_ctest_gpu(argv[0])) return 2;  // CTest's GPU, before the CUDA runtime starts
  // The arguments as given: InitGoogleTest takes its own flags out of argv, the shards need them.
  std::vector<char*> arguments(argv, argv + argc + 1);
  testing::InitGoogleTest(&argc, argv);
  if (testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();

  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    const char* why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    const char* require = std::getenv("DIT_REQUIRE_GPU");
    if (require && std::strcmp(require, "1") == 0) {
      std::fprintf(stderr, "FAIL: this test needs a GPU (%s) and DIT_REQUIRE_GPU=1 is set\n", why);
      return 1;
    }
    std::printf("SKIP: no usable GPU (%s); set DIT_REQUIRE_GPU=1 to make this a failure\n", why);
    return 77;
  }
  if (const int sharded = dit::test::run_in_shards(static_cast<int>(arguments.size()) - 1, arguments.data());
      sharded >= 0)
    return sharded;
  return RUN_ALL_TESTS();
}
