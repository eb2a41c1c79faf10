// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/gpu_probe.h"

#if DIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace dit::quality {

bool gpu_available(std::string& why) {
#if DIT_WITH_CUDA
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    why = cudaGetErrorString(status);
    return false;
  }
  if (devices == 0) {
    why = "no CUDA device";
    return false;
  }
  return true;
#else
  why = "this build has no CUDA backend (DIT_WITH_CUDA=OFF)";
  return false;
#endif
}

}  // namespace dit::quality
