// LayerNorm (no affine, eps 1e-6) fused with adaLN modulation: out = LN(x) * (1 + scale) + shift.
#pragma once

namespace dit::cpu {

// x [B, T, D], shift [B, D] and scale [B, D] (rows of the adaLN output, row stride
// `mod_stride` floats, so slices of the [B, 6D] modulation can be passed directly) ->
// out [B, T, D]. Statistics in float64.
void layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride,
                        float* out, int B, int T, int D, float eps = 1e-6f);

}  // namespace dit::cpu
