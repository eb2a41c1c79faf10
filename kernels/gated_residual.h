// The adaLN-Zero gated residual: x += gate * y.
#pragma once

namespace dit::cpu {

// x [B, T, D] updated in place; y [B, T, D]; gate [B, D] with row stride `gate_stride`.
void gated_residual(float* x, const float* y, const float* gate, int gate_stride, int B, int T, int D);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::gated_residual on device float32 pointers: x [B, T, D] += gate [B, D] * y [B, T, D].
void gated_residual(float* x, const float* y, const float* gate, int gate_stride, int B, int T, int D,
                    cudaStream_t stream);

}  // namespace dit::cuda
#endif
