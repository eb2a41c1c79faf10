// One warp's LayerNorm + adaLN modulation of one row, shared by layernorm_modulate.cu and
// residual_layernorm.cu: two-pass float32 statistics. Lane `lane` owns the elements
// d = lane + 32 j in increasing j, and every sum runs in that order, whichever form runs:
//   - where the caller allows it (kRegisterRows), rows of at most kRowRegisters * 32 elements
//     (DiT-XL/2's 1152 and every smaller hidden size) keep the lane's elements in registers: the row is read from memory once, every load
//     of a lane is issued before the first is used (36 in flight at D = 1152), and the second
//     pass reads registers;
//   - other rows re-read the row from memory for the second pass.
// Both forms perform the same float operations in the same order, so they give the same bits.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/cuda_reduce.cuh"
#include "kernels/cuda_types.h"

namespace dit::cuda {

constexpr int kRowRegisters = 36;  // elements per lane kept in registers: rows up to 1152

// Which outputs take the register form: every one (the fp16 and bf16 paths, where it was
// measured first, and the float32 path: knowledge/handbook/03_single_gpu/04_fusion.md).
template <typename Out>
constexpr bool kRegisterRows = true;

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

// The register form: v[j] holds element lane + 32 j (for lane + 32 j < D); D <= 32 * kRowRegisters.
template <typename Out>
__device__ __forceinline__ void layernorm_modulate_registers(const float (&v)[kRowRegisters], const float* sh,
                                                             const float* sc, Out* o, int D, float eps, int lane) {
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowRegisters; ++j)
    if (lane + 32 * j < D) sum += v[j];
  const float mean = warp_sum(sum) / static_cast<float>(D);
  float squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowRegisters; ++j) {
    if (lane + 32 * j < D) {
      const float centred = v[j] - mean;
      squares += centred * centred;
    }
  }
  const float variance = warp_sum(squares) / static_cast<float>(D);
  const float inv_std = 1.0f / sqrtf(variance + eps);
#pragma unroll
  for (int j = 0; j < kRowRegisters; ++j) {
    const int d = lane + 32 * j;
    if (d < D) o[d] = from_float<Out>((v[j] - mean) * inv_std * (1.0f + sc[d]) + sh[d]);
  }
}

}  // namespace dit::cuda
