// Elementwise activations: SiLU and GELU with the tanh approximation (timm's Mlp with
// approximate="tanh").
#pragma once

#include <cstdint>

namespace dit::cpu {

// out[i] = x[i] * sigmoid(x[i]); in place allowed.
void silu(const float* x, float* out, int64_t n);
// out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); in place allowed.
void gelu_tanh(const float* x, float* out, int64_t n);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// out[i] = silu(x[i]): float32 in, `out_dtype` out (in place when out_dtype is f32 and out == x).
void silu(const float* x, void* out, DeviceDtype out_dtype, int64_t n, cudaStream_t stream);
// out[i] = gelu_tanh(x[i]) in `dtype` (computed in float32); in place allowed.
void gelu_tanh(const void* x, void* out, DeviceDtype dtype, int64_t n, cudaStream_t stream);

}  // namespace dit::cuda
#endif
