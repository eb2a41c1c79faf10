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

// As above, with x in `x_dtype`: float32, or a 16-bit residual stream (f16 or bf16; then y and
// out in the same dtype, and D <= 1152). The update and the statistics stay float32; the
// updated row is rounded to x_dtype when it is stored, after the LayerNorm has read it.
void residual_layernorm_modulate(void* x, DeviceDtype x_dtype, const void* y, DeviceDtype y_dtype, const float* gate,
                                 int gate_stride, const float* shift, const float* scale, int mod_stride, void* out,
                                 DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream);

// A block's two gated residuals with the stream written once (the vec4 row form only: D a
// multiple of 4 up to 1152, residual_layernorm_pair_supported; float rows and strides 16-byte
// aligned). After the attention branch, store_x false and y2 null: out = LN(x + gate y)
// modulated, x left as it was. After the MLP branch, y2 and gate2 given: x = (x + gate y) +
// gate2 y2, in that order and in float32, the floats two residual_layernorm_modulate calls
// would store, and out its LayerNorm modulated. Both branches share y_dtype and gate_stride. x
// is in x_dtype: float32, or a 16-bit stream (y and out then in its dtype) read as floats and
// rounded once, when the pair's update is stored.
bool residual_layernorm_pair_supported(int D);
void residual_layernorm_modulate_pair(void* x, DeviceDtype x_dtype, bool store_x, const void* y, const float* gate,
                                      const void* y2, const float* gate2, int gate_stride, DeviceDtype y_dtype,
                                      const float* shift, const float* scale, int mod_stride, void* out,
                                      DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream);

}  // namespace dit::cuda
