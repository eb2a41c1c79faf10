// The timestep sinusoid of DiT's TimestepEmbedder (the MLP after it is two linear layers).
#pragma once

#include <cstdint>

namespace dit::cpu {

// t [B] -> out [B, dim]: [cos(t f_i), sin(t f_i)] (cosine first), f_i = exp(-ln(max_period) * i
// / half), half = dim / 2, computed in float32 as upstream (so that t * f_i rounds the same).
void timestep_embed(const int64_t* t, float* out, int B, int dim = 256, float max_period = 10000.0f);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::timestep_embed: t [B] (device int64) -> out [B, dim] (device float32).
void timestep_embed(const int64_t* t, float* out, int B, int dim, float max_period, cudaStream_t stream);

}  // namespace dit::cuda
#endif
