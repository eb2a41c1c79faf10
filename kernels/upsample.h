// Nearest-neighbour 2x upsampling of channels-last activations (the VAE decoder's Upsample2D).
#pragma once

#include <cstdint>

namespace dit::cpu {

// in [N, H, W, C] -> out [N, 2H, 2W, C], out[n, y, x, c] = in[n, y / 2, x / 2, c].
void upsample_nearest2x(const float* in, float* out, int N, int H, int W, int C);

}  // namespace dit::cpu

#ifdef DIT_WITH_CUDA
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::upsample_nearest2x on device memory in `dtype`; C % 2 == 0 required (pairs of
// 16-bit values move as one 32-bit word). in and out must not overlap.
void upsample_nearest2x(const void* in, void* out, DeviceDtype dtype, int N, int H, int W, int C, cudaStream_t stream);

}  // namespace dit::cuda
#endif
