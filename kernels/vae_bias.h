// Per-channel bias over channels-last activations: what follows a cuDNN convolution of the
// VAE decoder whose bias cuDNN does not add itself (the classic forward call has no bias): every
// convolution in fp32 and tf32, and in fp16/bf16 those without a fused form (model/cuda/vae_cuda.cpp).
#pragma once

#include <cstdint>

namespace dit::cpu {

// x [rows, C] += bias[C] (row-major: rows = N * H * W pixels, channels last), in float32.
void vae_add_bias(float* x, const float* bias, int64_t rows, int C);

}  // namespace dit::cpu

#ifdef DIT_WITH_CUDA
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::vae_add_bias on device memory: x in `dtype`, bias float32; the sum is formed in
// float32 and rounded once. C % 2 == 0 required (two channels per thread).
void vae_add_bias(void* x, const float* bias, DeviceDtype dtype, int64_t rows, int C, cudaStream_t stream);

}  // namespace dit::cuda
#endif
