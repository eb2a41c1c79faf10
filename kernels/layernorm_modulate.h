// LayerNorm (no affine, eps 1e-6) fused with adaLN modulation: out = LN(x) * (1 + scale) + shift.
#pragma once

namespace dit::cpu {

// x [B, T, D], shift [B, D] and scale [B, D] (rows of the adaLN output, row stride
// `mod_stride` floats, so slices of the [B, 6D] modulation can be passed directly) ->
// out [B, T, D]. Statistics in float64.
void layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride, float* out, int B,
                        int T, int D, float eps = 1e-6f);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::layernorm_modulate with float32 statistics: x [B, T, D] f32, shift/scale f32
// rows of stride mod_stride -> out [B, T, D] in `out_dtype` (the next GEMM's operand type).
void layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride, void* out,
                        DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream);

}  // namespace dit::cuda
#endif
