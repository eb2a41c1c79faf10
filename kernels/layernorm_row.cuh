// One warp's LayerNorm + adaLN modulation of one row, shared by layernorm_modulate.cu and
// residual_layernorm.cu: two-pass float32 statistics, the second pass re-reading the row.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda_reduce.cuh"
#include "kernels/cuda_types.h"

namespace dit::cuda {

// Every lane of the warp calls it; `lane_sum` is this lane's sum of xr[lane], xr[lane + 32], ...
// Writes o[d] = (xr[d] - mean) / sqrt(variance + eps) * (1 + sc[d]) + sh[d] for d < D.
template <typename Out>
__device__ __forceinline__ void layernorm_modulate_row(const float* xr, float lane_sum, const float* sh,
                                                       const float* sc, Out* o, int D, float eps, int lane) {
  const float mean = warp_sum(lane_sum) / static_cast<float>(D);
  float squares = 0.0f;
  for (int d = lane; d < D; d += 32) {
    const float centred = xr[d] - mean;
    squares += centred * centred;
  }
  const float variance = warp_sum(squares) / static_cast<float>(D);
  const float inv_std = 1.0f / sqrtf(variance + eps);
  for (int d = lane; d < D; d += 32) o[d] = from_float<Out>((xr[d] - mean) * inv_std * (1.0f + sc[d]) + sh[d]);
}

}  // namespace dit::cuda
