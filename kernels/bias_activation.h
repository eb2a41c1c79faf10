// Bias (and GELU-tanh) applied to a GEMM output in place, for when cuBLASLt offers no fused
// epilogue for a shape and type (CUDA only; reference: out + bias, then dit::cpu::gelu_tanh).
#pragma once

#include "kernels/cuda_types.h"

namespace dit::cuda {

// out [M, N] in `dtype` += bias [N] (same dtype), then GELU-tanh when `gelu`; float32 math.
void bias_activation(void* out, const void* bias, DeviceDtype dtype, int M, int N, bool gelu, cudaStream_t stream);

}  // namespace dit::cuda
