// The adaLN-Zero gated residual fused with the next LayerNorm + modulation (CUDA only; its
// reference is dit::cpu::gated_residual followed by dit::cpu::layernorm_modulate):
//   x += gate * y;  out = LN(x) * (1 + scale) + shift
#pragma once

#include "kernels/cuda_types.h"

namespace dit::cuda {

// x [B, T, D] f32 updated in place; y [B, T, D] in `y_dtype` (the branch output: float32, or
// the 16-bit compute dtype); gate, shift, scale f32 rows of their own strides (slices of adaLN
// outputs) -> out [B, T, D] in `out_dtype`. One read of x and y, float32 arithmetic and
// statistics.
void residual_layernorm_modulate(float* x, const void* y, DeviceDtype y_dtype, const float* gate, int gate_stride,
                                 const float* shift, const float* scale, int mod_stride, void* out,
                                 DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream);

}  // namespace dit::cuda
