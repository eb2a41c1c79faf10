// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/gpu_probe.h"

#if DIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "core/error.h"

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

std::string device_key(const std::string& backend) {
  if (backend == "cpu") return "cpu";
  std::string why;
  if (!gpu_available(why)) throw Error(ErrorKind::device, "no GPU to name the floors of a " + backend + " set: " + why);
#if DIT_WITH_CUDA
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess)
    throw Error(ErrorKind::device, "cannot read the CUDA device's properties");
  return properties.name;
#else
  return "";
#endif
}

}  // namespace dit::quality
