// Patch embedding: a p x p stride-p convolution C -> D with bias, plus the positional table.
#pragma once

#include <cstddef>
#include <vector>

namespace dit::cpu {

// x [B, C, S, S] (NCHW latent), weight [D, C, p, p], bias [D], pos_embed [T, D] ->
// out [B, T, D] with T = (S/p)^2, token = row * (S/p) + col.
void patch_embed(const float* x, const float* weight, const float* bias, const float* pos_embed, float* out, int B,
                 int C, int S, int p, int D);

// weight [D, C, p, p] (PyTorch's layout) -> weight_t [C p p, D], the CUDA kernels' layout.
std::vector<float> transpose_patch_weight(const std::vector<float>& weight, int D);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::patch_embed, on device float32 pointers, but with the convolution's weight
// transposed: weight_t [C p p, D], element (i, d) = weight[d, i] (i = (c p + r) p + q), so that the
// threads of a warp, one output feature each, read consecutive floats (transpose_patch_weight).
void patch_embed(const float* x, const float* weight_t, const float* bias, const float* pos_embed, float* out, int B,
                 int C, int S, int p, int D, cudaStream_t stream);

// The patch embedding fused with the first block's LayerNorm + modulation (its reference is
// dit::cpu::patch_embed followed by dit::cpu::layernorm_modulate), weight_t as above: residual = patch_embed(x)
// [B, T, D] f32 (the same bits as patch_embed), out = LN(residual) * (1 + scale) + shift in
// `out_dtype`, float32 statistics; shift and scale f32 rows of stride mod_stride. One kernel where
// D % 4 == 0, D <= 1152, C p^2 % 4 == 0 and C p^2 <= 256 (every DiT configuration); otherwise
// patch_embed, then layernorm_modulate.
void patch_embed_layernorm_modulate(const float* x, const float* weight_t, const float* bias, const float* pos_embed,
                                    float* residual, const float* shift, const float* scale, int mod_stride, void* out,
                                    DeviceDtype out_dtype, int B, int C, int S, int p, int D, float eps,
                                    cudaStream_t stream);

// As above, with the residual written in `residual_dtype` (float32, or a 16-bit residual stream:
// each value rounded to nearest after the LayerNorm has read it in float32); a 16-bit residual
// needs the one-kernel form.
void patch_embed_layernorm_modulate(const float* x, const float* weight_t, const float* bias, const float* pos_embed,
                                    void* residual, DeviceDtype residual_dtype, const float* shift, const float* scale,
                                    int mod_stride, void* out, DeviceDtype out_dtype, int B, int C, int S, int p, int D,
                                    float eps, cudaStream_t stream);

}  // namespace dit::cuda
#endif
