// Unpatchify: the final layer's per-token vectors back to an image-shaped tensor.
#pragma once

namespace dit::cpu {

// tokens [B, T, p*p*C] with vector layout [p, p, C] = (r, q, c), T = g*g ->
// out [B, C, g*p, g*p]: out[c, h*p + r, w*p + q] = tokens[h*g + w][r, q, c].
void unpatchify(const float* tokens, float* out, int B, int g, int p, int C);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::unpatchify on device float32 pointers.
void unpatchify(const float* tokens, float* out, int B, int g, int p, int C, cudaStream_t stream);

}  // namespace dit::cuda
#endif
