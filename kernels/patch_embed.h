// Patch embedding: a p x p stride-p convolution C -> D with bias, plus the positional table.
#pragma once

namespace dit::cpu {

// x [B, C, S, S] (NCHW latent), weight [D, C, p, p], bias [D], pos_embed [T, D] ->
// out [B, T, D] with T = (S/p)^2, token = row * (S/p) + col.
void patch_embed(const float* x, const float* weight, const float* bias, const float* pos_embed,
                 float* out, int B, int C, int S, int p, int D);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::patch_embed, on device float32 pointers.
void patch_embed(const float* x, const float* weight, const float* bias, const float* pos_embed,
                 float* out, int B, int C, int S, int p, int D, cudaStream_t stream);

}  // namespace dit::cuda
#endif
