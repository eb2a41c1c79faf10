// Classifier-free guidance combine, exactly as upstream forward_with_cfg.
#pragma once

namespace dit::cpu {

// out [2B, C, S, S] holds the model output of the doubled batch (cond rows, then uncond rows);
// in place, channels [0, guided_channels) of both halves become
// uncond + scale * (cond - uncond); the other channels are left as they are.
void guidance_combine(float* out, int B, int C, int HW, float scale, int guided_channels = 3);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

#if defined(__CUDACC__)
// uncond + scale * (cond - uncond) in float64 as the CPU reference, rounded once: the guided
// value of every device path (guidance_combine, loop_step) has the reference's bits.
__device__ __forceinline__ float guided_value(float cond, float uncond, float scale) {
  const double c = cond, u = uncond;
  return static_cast<float>(__dadd_rn(u, __dmul_rn(static_cast<double>(scale), __dsub_rn(c, u))));
}
#endif

// As dit::cpu::guidance_combine on a device float32 buffer.
void guidance_combine(float* out, int B, int C, int HW, float scale, int guided_channels, cudaStream_t stream);

}  // namespace dit::cuda
#endif
