// CUDA classifier-free guidance combine (kernels/guidance.h), in place on the doubled batch.
#include "kernels/guidance.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

// One thread per (b < B, c < guided, pixel); both halves receive the guided value.
static __global__ void guidance_combine_kernel(float* out,  // [2B, C, HW]
                                               int B, int C, int HW, int guided, float scale) {
  const size_t total = static_cast<size_t>(B) * guided * HW;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int pixel = static_cast<int>(i % HW);
    const int c = static_cast<int>((i / HW) % guided);
    const size_t b = i / (static_cast<size_t>(HW) * guided);
    const size_t cond_index = (b * C + c) * HW + pixel;
    const size_t uncond_index = ((b + B) * C + c) * HW + pixel;
    const float value = guided_value(out[cond_index], out[uncond_index], scale);
    out[cond_index] = value;
    out[uncond_index] = value;
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_guidance_combine(float* out, int B, int C, int HW, float scale, int guided, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t total = static_cast<size_t>(B) * guided * HW;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + kThreads - 1) / kThreads, 65535));
  guidance_combine_kernel<<<blocks, kThreads, 0, stream>>>(out, B, C, HW, guided, scale);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void guidance_combine(float* out, int B, int C, int HW, float scale, int guided_channels, cudaStream_t stream) {
  const char* op = "dit::cuda::guidance_combine";
  require(B > 0 && C > 0 && HW > 0, op, "non-positive size");
  require(guided_channels > 0 && guided_channels <= C, op,
          "guided_channels " + std::to_string(guided_channels) + " not in [1, C]");
  require_aligned(out, alignof(float), op, "out");
  launch_guidance_combine(out, B, C, HW, scale, guided_channels, stream);
}

}  // namespace dit::cuda
