// The adaLN-Zero gated residual: x += gate * y.
#pragma once

namespace dit::cpu {

// x [B, T, D] updated in place; y [B, T, D]; gate [B, D] with row stride `gate_stride`.
void gated_residual(float* x, const float* y, const float* gate, int gate_stride,
                    int B, int T, int D);

}  // namespace dit::cpu
